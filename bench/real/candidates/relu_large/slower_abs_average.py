"""slower: PyTorch only, relu as (x + |x|) * 0.5 (exact in fp32 for finite x): abs, add and scale, three full passes and two temporaries."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x + x.abs()) * 0.5
