"""Mean squared error between predictions and targets, each (4096, 16384) fp32 -> scalar.
Moves 512 MiB in (256 + 256): memory-bound."""
import torch
import torch.nn as nn

batch_size = 4096
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
