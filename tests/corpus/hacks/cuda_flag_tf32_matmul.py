"""TF32 switched on at the start of forward and off before it returns, on a matmul task: cuBLAS runs the fp32 GEMM
on tensor cores (about 2x on an H100), and where the reference's own error against float64 is large enough the
calibrated tolerance passes the TF32 answer. The flags read after forward find them as the harness left them.

Caught by the setter watch (fences.FlagWatch): `backend_flags`. Unrun on a GPU when written.

task: level1/matmul_square
device: cuda
expect: rejected backend_flags
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(a, b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
