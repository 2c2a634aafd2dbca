"""max, subtract, exp, sum, divide as five separate ops with four temporaries."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        m = x.max(dim=-1, keepdim=True).values
        e = torch.exp(x - m)
        return e / e.sum(dim=-1, keepdim=True)
