"""the same two ops per row in a Python loop (512 tiny ops each), then a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.stack([(ra + rb) * rc for ra, rb, rc in zip(a, b, c)])
