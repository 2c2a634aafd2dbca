"""ReLU over a (512, 1024) fp32 tensor: y = max(x, 0). Moves 4 MB (2 in, 2 out); CPU task."""
import torch
import torch.nn as nn

batch_size = 512
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
