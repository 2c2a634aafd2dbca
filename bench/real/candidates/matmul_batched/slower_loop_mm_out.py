"""slower: PyTorch only, a Python loop of 64 torch.mm calls writing into slices of a preallocated output: 64 small GEMM launches instead of one batched cuBLAS call."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        C = torch.empty(A.shape[0], A.shape[1], B.shape[2], device=A.device, dtype=A.dtype)
        for i in range(A.shape[0]):
            torch.mm(A[i], B[i], out=C[i])
        return C
