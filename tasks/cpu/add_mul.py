"""Elementwise (a + b) * c over three (512, 1024) fp32 tensors. Moves 8 MB (6 in, 2 out); CPU task."""
import torch
import torch.nn as nn

batch_size = 512
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return (a + b) * c


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
