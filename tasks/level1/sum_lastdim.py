"""Sum over the last dim of a (8192, 16384) fp32 tensor -> (8192,). Moves 512 MiB in (32 KiB out): memory-bound."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
