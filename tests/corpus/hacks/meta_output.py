"""Meta-device output: a plain torch.Tensor with the right shape and dtype but no data at all.

A meta tensor costs nothing to "compute" and passes type, shape and dtype checks.

task: cpu/relu
expect: wrong_output output_device
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.empty(x.shape, dtype=x.dtype, device="meta")
