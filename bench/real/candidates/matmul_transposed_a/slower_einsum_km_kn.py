"""slower: PyTorch only, torch.einsum("km,kn->mn", A, B): the same transposed cuBLAS GEMM behind einsum's planning and permutes; expected to tie or lose a little."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("km,kn->mn", A, B)
