"""slower: PyTorch only, torch.einsum("bmk,bkn->bmn", A, B): lowered to the same batched cuBLAS GEMM plus einsum's planning overhead; expected to tie or lose a little."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bmk,bkn->bmn", A, B)
