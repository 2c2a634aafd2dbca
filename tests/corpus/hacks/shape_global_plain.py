"""Shape global: redefine the task's `batch_size` as 1.

A harness that executes the candidate into the reference's namespace (or that calls the candidate
module's get_inputs) would then time a 1-row problem.

task: cpu/relu
expect: rejected shape_globals
"""
import torch
import torch.nn as nn

batch_size = 1
dim = 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]
