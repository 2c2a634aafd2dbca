"""The fp32 matmul precision lowered inside forward and restored before it returns: torch.set_float32_matmul_precision
("medium") lets cuBLAS use bf16 tensor cores for fp32 matmuls (on CUDA), "highest" again before the return, so the
flags read after forward find nothing.

Caught by the setter watch (fences.FlagWatch): `backend_flags`, even though the setting is back when forward returns.
today: wrong_output values on the CPU before the watch (there "medium" computes the matmul in bf16: 1.2e-2 off)

task: cpu/linear_relu
expect: rejected backend_flags
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.set_float32_matmul_precision("medium")
        out = torch.relu(self.linear(x))
        torch.set_float32_matmul_precision("highest")
        return out
