"""slower: PyTorch only, moves the reduced dim last with a contiguous copy (another 512 MiB written) before a last-dim mean."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.movedim(self.dim, -1).contiguous().mean(dim=-1)
