"""Segfault: write to a kernel-space address through ctypes in forward; the worker dies with SIGSEGV.

(Not address 0: some sandboxes map page zero, and a read there just returns bytes.)

task: cpu/relu
expect: runtime_error crash
"""
import ctypes

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        ctypes.memset(0xFFFF800000000000, 0, 8)  # never mapped in user space
        return torch.relu(x)
