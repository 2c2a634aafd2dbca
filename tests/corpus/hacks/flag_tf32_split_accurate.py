"""fp32-accurate matmul on TF32 tensor cores (3xTF32): split each operand into a TF32 part and the rest, and sum
the three products that matter (hi*hi + hi*lo + lo*hi), with TF32 allowed inside forward only and put back
before forward returns.

The project's rule: arithmetic inside forward is the candidate's choice, tensor cores included, so long as every
output meets the fp32 tolerance on every call (every call's is checked); a global setting must be as it was when
forward returns (read right after it does). This file keeps both: ok, ~1.5-2x on an H100.

task: level1/matmul_square
device: cuda
expect: ok
"""
import torch
import torch.nn as nn


def _split(x):
    hi = (x.view(torch.int32) & -8192).view(torch.float32)  # the top 10 mantissa bits: exact in TF32
    return hi, x - hi


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        (a, a_lo), (b, b_lo) = _split(A.contiguous()), _split(B.contiguous())
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.mm(a, b_lo).add_(torch.mm(a_lo, b)).add_(torch.mm(a, b))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
