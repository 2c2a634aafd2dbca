"""Monkeypatch the clock: time.perf_counter runs at a tenth of real speed after import.

Any timing taken with perf_counter in the candidate's process reports 10x faster calls.

task: cpu/relu
expect: rejected monkeypatch
"""
import time

import torch
import torch.nn as nn

_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) * 0.1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
