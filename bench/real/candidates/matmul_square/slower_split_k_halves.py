"""slower: PyTorch only, C = A[:, :K/2] @ B[:K/2] + A[:, K/2:] @ B[K/2:]: two half-depth GEMMs on strided views plus an extra add pass over C."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        h = A.shape[1] // 2
        C = torch.mm(A[:, :h], B[:h])
        C.addmm_(A[:, h:], B[h:])  # the second half accumulated in place: still a second GEMM reading and writing C
        return C
