"""Row sums x.sum(dim=1) of a (512, 2048) fp32 tensor -> (512,). Moves 4 MB in; CPU task."""
import torch
import torch.nn as nn

batch_size = 512
dim = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
