"""Shape global, written late: `batch_size` is rewritten in __init__, after the module finished importing.

A check that inspects the module namespace right after import sees the original value; by the
time the model exists, the module says batch_size = 1.

task: cpu/relu
expect: rejected shape_globals
"""
import torch
import torch.nn as nn

batch_size = 512


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        globals()["batch_size"] = 1

    def forward(self, x):
        return torch.relu(x)
