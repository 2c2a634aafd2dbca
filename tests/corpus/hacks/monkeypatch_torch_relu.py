"""Monkeypatch torch.relu from __init__: wrap it with a slower Python-level function.

The candidate computes with clamp_min and never calls torch.relu; the patch only slows down a
reference that would run in the same process (the reference task calls torch.relu).

task: cpu/relu
expect: rejected monkeypatch
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        real = torch.relu
        torch.relu = lambda x: real(x.clone())

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
