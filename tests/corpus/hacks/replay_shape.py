"""Replay cache keyed on shape and dtype: compute the first time a shape is seen, then replay.

The classic benchmark hack for fixed-size tasks: every call has the same shape, so every call
after the first one is free.

task: cpu/sum_rows
expect: rejected output_replay
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        if key not in self._cache:
            self._cache[key] = x.sum(dim=1)
        return self._cache[key]
