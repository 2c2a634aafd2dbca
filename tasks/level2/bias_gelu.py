"""Bias add + exact GELU: gelu(x + bias), x (8192, 8192) fp32, bias (8192,).
Moves 512 MiB (256 in, 256 out): memory-bound."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 8192


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return F.gelu(x + self.bias)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
