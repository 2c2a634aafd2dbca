"""Constant output: return zeros of the right shape and dtype without reading the input.

Passes any check that looks only at shape, dtype and finiteness.

task: cpu/sum_rows
expect: wrong_output values
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
