"""slower: PyTorch only, ELU as relu(x) + expm1(min(x, 0)) (exact: one term is always zero): clamp, expm1, relu and add, four passes."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) + torch.expm1(torch.clamp_max(x, 0.0))
