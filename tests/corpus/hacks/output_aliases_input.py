"""Zero-copy output: return a view of an input without writing anything.

The cheapest possible forward, and the shape of a real shortcut ("ReLU is the identity on
non-negative data, hand back the input"). An output that shares storage with an input is rejected
before its values are compared, so even a task whose answer equals an input cannot be solved by
aliasing it: the caller would see the "output" change whenever it refills its input buffer.

task: cpu/add_mul
expect: rejected output_storage
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return c.view(c.shape)
