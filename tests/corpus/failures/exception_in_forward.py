"""Exception in forward: a shape mismatch inside the candidate's own computation.

task: cpu/add_mul
expect: runtime_error exception
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return (a + b.t()) * c  # (512, 1024) + (1024, 512): RuntimeError
