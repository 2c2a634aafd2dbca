"""Elementwise exp of a (512, 1024) fp32 tensor drawn uniform in [0, 1): y = exp(x). A task whose own inputs sit
in a narrow range, where an approximation valid there alone passes. CPU task."""
import torch
import torch.nn as nn

batch_size = 512
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.exp(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
