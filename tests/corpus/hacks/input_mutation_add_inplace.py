"""Input mutation: accumulate a + b into the caller's `a` to save an allocation.

The output is a fresh tensor and its values are right, but the caller's input `a` now holds a + b.
A harness that reuses inputs (or feeds the same ones to the reference afterwards) gets a changed
problem.

task: cpu/add_mul
expect: rejected input_mutation
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        a.add_(b)
        return torch.mul(a, c)
