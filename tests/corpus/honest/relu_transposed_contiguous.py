"""ReLU through a transposed view, returned as a fresh .contiguous() copy in the expected layout.

task: cpu/relu
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x.t()).t().contiguous()
