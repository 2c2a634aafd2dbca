"""Replay cache keyed on the input's data pointer: compute once per buffer, then return the old result.

Benchmarks that reuse one input buffer for every timed call hand the candidate the same
`data_ptr()` again and again, so after the first call this "kernel" costs a dict lookup.

task: cpu/relu
expect: rejected output_replay
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache = {}

    def forward(self, x):
        key = x.data_ptr()
        if key not in self._cache:
            self._cache[key] = torch.relu(x)
        return self._cache[key]
