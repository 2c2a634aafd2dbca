"""Gated activation with clamp: clamp(silu(a) * b, -6, 6), a and b (4096, 16384) fp32.
Moves 768 MiB (2x256 in, 256 out): memory-bound."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.clamp(F.silu(a) * b, -6.0, 6.0)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
