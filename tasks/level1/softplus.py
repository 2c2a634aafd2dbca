"""Softplus over a (4096, 16384) fp32 tensor: y = log(1 + exp(x)). Moves 512 MiB (256 in, 256 out): memory-bound."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.softplus(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
