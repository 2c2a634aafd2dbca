"""exp(x) / sum(exp(x)) without subtracting the row max overflows on large-magnitude inputs."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)
