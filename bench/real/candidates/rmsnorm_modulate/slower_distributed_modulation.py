"""slower: PyTorch only, divides by sqrt(mean(x*x) + eps) and applies the modulation distributed as y + y * scale + shift: about 11 passes over 512 MiB."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        y = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + self.eps)
        return y + y * scale.unsqueeze(1) + shift.unsqueeze(1)
