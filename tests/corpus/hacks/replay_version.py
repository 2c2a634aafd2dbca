"""Replay cache keyed on (data_ptr, tensor._version): "the buffer was not written since, so reuse".

`_version` counts in-place writes made through this tensor object. Content written into shared
memory by another process (or through a different tensor) does not bump it, so the key repeats
while the content is new.

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
        key = (x.data_ptr(), x._version)
        if key not in self._cache:
            self._cache[key] = torch.relu(x)
        return self._cache[key]
