"""Row sums as a matrix-vector product with a ones vector (BLAS gemv instead of a reduction kernel).

task: cpu/sum_rows
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ones = None

    def forward(self, x):
        if self._ones is None or self._ones.shape[0] != x.shape[1] or self._ones.device != x.device:
            self._ones = torch.ones(x.shape[1], dtype=x.dtype, device=x.device)  # input-independent
        return torch.mv(x, self._ones)
