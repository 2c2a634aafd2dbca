"""x @ ones as a BLAS matrix-vector product instead of a reduction kernel."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x @ torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
