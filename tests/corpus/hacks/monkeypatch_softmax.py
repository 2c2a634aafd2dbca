"""Monkeypatch torch.softmax inside forward so every later caller in the process gets a slowed version.

The candidate itself computes softmax honestly; the patch exists only to slow down (or break) a
reference that runs in the same process.

task: cpu/softmax
expect: rejected monkeypatch
"""
import torch
import torch.nn as nn

_real_softmax = torch.softmax


def _slow_softmax(x, dim=None, **kw):
    for _ in range(3):
        y = _real_softmax(x, dim=dim, **kw)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.softmax = _slow_softmax
        return _real_softmax(x, dim=-1)
