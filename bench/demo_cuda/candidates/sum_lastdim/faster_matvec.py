"""faster (hoped): PyTorch only, x @ ones(cols): a memory-bound fp32 GEMV instead of a reduction; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x @ torch.ones(x.shape[-1], device=x.device, dtype=x.dtype)
