"""clamp_min(0) is one elementwise pass like relu, through a leaner dispatch path."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
