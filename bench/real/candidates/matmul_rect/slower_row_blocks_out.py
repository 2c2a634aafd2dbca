"""slower: PyTorch only, four torch.mm calls over row blocks of A written into slices of a preallocated C with out=; same cuBLAS work in smaller launches, expected to tie or lose a little."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        M = A.shape[0]
        C = torch.empty(M, B.shape[1], device=A.device, dtype=A.dtype)
        step = max(1, (M + 3) // 4)
        for r in range(0, M, step):
            torch.mm(A[r:r + step], B, out=C[r:r + step])  # a row slice of a contiguous C is itself contiguous
        return C
