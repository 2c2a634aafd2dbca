"""Mean over the middle dim of a (256, 1024, 512) fp32 tensor -> (256, 512). Moves 512 MiB in: memory-bound."""
import torch
import torch.nn as nn

batch_size = 256
dim1 = 1024
dim2 = 512


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.mean(dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
