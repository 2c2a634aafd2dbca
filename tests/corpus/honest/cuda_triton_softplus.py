"""Triton kernel for softplus: one masked 1-D block per program, the numerically stable form max(x, 0) + log(1 + e^-|x|).

PyTorch's softplus (beta 1, threshold 20) returns x for x > 20 and log1p(exp(x)) otherwise; the stable form equals it
to float32 rounding everywhere (e^-|x| never overflows) and the threshold branch is kept as is. Triton is imported and
the kernel defined on first use, so importing this module needs no Triton; Triton launches on the current stream.

task: level1/softplus
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BLOCK = 1024
_kernel = None


def _softplus_kernel():
    global _kernel, triton, tl
    if _kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def softplus_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            y = tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))
            y = tl.where(x > 20.0, x, y)
            tl.store(y_ptr + offs, y, mask=mask)

        _kernel = softplus_kernel
    return _kernel


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not (x.is_cuda and x.dtype == torch.float32):
            return F.softplus(x)
        xc = x.contiguous()
        y = torch.empty_like(xc)
        n = xc.numel()
        if n:
            _softplus_kernel()[((n + BLOCK - 1) // BLOCK,)](xc, y, n, BLOCK=BLOCK)
        return y
