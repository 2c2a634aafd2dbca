"""Replay cache keyed on a content fingerprint: the signs of three sampled elements.

Looks like "only reuse when the input is the same", but a few sampled elements cannot tell inputs
apart: there are only 8 keys, so by the 9th call at the latest a new input gets an old output.

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
        flat = x.reshape(-1)
        n = flat.numel()
        key = (tuple(x.shape), tuple((flat[[0, n // 2, n - 1]] > 0).tolist()))
        if key not in self._cache:
            self._cache[key] = torch.relu(x)
        return self._cache[key]
