"""Backend flag: torch.backends.cudnn.benchmark = True at import time.

Autotuned cuDNN algorithms change both speed and numerics for every convolution in the process.

task: cpu/relu
expect: rejected backend_flags
"""
import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
