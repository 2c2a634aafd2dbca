"""Syntax error: an unclosed parenthesis in forward.

task: cpu/relu
expect: compile_error syntax
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x
