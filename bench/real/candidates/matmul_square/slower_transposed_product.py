"""slower: PyTorch only, C = (B^T @ A^T)^T made contiguous: the same cuBLAS GEMM on transposed views, then a 64 MiB transpose copy."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.mm(B.t(), A.t()).t().contiguous()
