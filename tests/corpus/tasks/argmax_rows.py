"""Argmax over the last dim of a (256, 4096) fp32 tensor -> int64 (256,). Reads 4 MB; CPU task. An output that
positive rescaling of the input barely changes: the candidate must still read every entry of every new input."""
import torch
import torch.nn as nn

batch_size = 256
dim = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
