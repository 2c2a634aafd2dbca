"""Wrong forward signature: forward takes two tensors where the task's Model takes one.

task: cpu/relu
expect: compile_error signature
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x) + y
