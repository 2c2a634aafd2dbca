"""Vectorised row normalisation: one norm over dim 1 instead of a Python loop over 256 rows.

task: cpu/loop_rownorm
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)
