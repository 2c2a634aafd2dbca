"""Monkeypatch a Tensor method: torch.Tensor.sum is replaced at import time.

The replacement reports its own calls (a cover for timing tricks) and otherwise forwards.

task: cpu/sum_rows
expect: rejected monkeypatch
"""
import torch
import torch.nn as nn

_real_sum = torch.Tensor.sum
CALLS = [0]


def _sum(self, *args, **kwargs):
    CALLS[0] += 1
    return _real_sum(self, *args, **kwargs)


torch.Tensor.sum = _sum


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _real_sum(x, dim=1)
