"""Wrong dtype: compute and return float64.

More accurate than the reference, but the caller asked for float32 (and a float64 result makes a
loose comparison against a float64 oracle look perfect).

task: cpu/softmax
expect: wrong_output output_dtype
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.double(), dim=-1)
