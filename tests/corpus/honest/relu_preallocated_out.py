"""Preallocated output buffer reused across calls (allocation hoisted out of forward): legitimate.

The buffer depends only on the input's shape/dtype/device, and its content is recomputed from the
input on every call; it is the candidate's own storage, never an input's.

task: cpu/relu
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = None

    def forward(self, x):
        if self.buf is None or self.buf.shape != x.shape or self.buf.dtype != x.dtype or self.buf.device != x.device:
            self.buf = torch.empty_like(x)
        return torch.clamp(x, min=0.0, out=self.buf)
