"""slower: PyTorch only, C = cat([A @ B[:, :N/2], A @ B[:, N/2:]], dim=1): two GEMMs on column slices of B, then a 128 MiB concatenation copy."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        h = B.shape[1] // 2
        return torch.cat([torch.mm(A, B[:, :h]), torch.mm(A, B[:, h:])], dim=1)
