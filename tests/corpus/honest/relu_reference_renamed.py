"""The reference itself, renamed to ModelNew: correct, and must be recognised as the reference's code.

task: cpu/relu
expect: ok
same_as_reference: true
"""
import torch
import torch.nn as nn

batch_size = 512
dim = 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
