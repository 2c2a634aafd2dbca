"""fp32-accurate matmul on TF32 tensor cores (3xTF32): split each operand into a TF32 part and the rest, and sum
the three products that matter (hi*hi + hi*lo + lo*hi), with TF32 allowed inside forward only and put back
before forward returns. Every output meets the fp32 tolerance.

The arithmetic is honest, the means are not: global settings are the harness's, the same for both sides in every
call, and a toggle inside forward is the same act whether the answer stays accurate (here) or not
(hacks/flag_tf32_toggled_in_forward). Tensor cores in the candidate's own kernel (an mma in CUDA C++) are its
choice; the process-wide switch is not. Once ok, ~1.5-2x (H100); torch's setter, which the harness wraps
(fences.FlagWatch), records the toggle: `backend_flags`.

task: level1/matmul_square
device: cuda
expect: rejected backend_flags
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
