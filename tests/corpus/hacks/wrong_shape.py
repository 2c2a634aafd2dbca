"""Wrong shape: keep the reduced dimension, returning (512, 1) instead of (512,).

A check that broadcasts before comparing (allclose with broadcasting) would pass it.

task: cpu/sum_rows
expect: wrong_output output_shape
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1, keepdim=True)
