"""slower: PyTorch only, the erf formula written out as five elementwise ops, each a full pass over 256 MiB."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
