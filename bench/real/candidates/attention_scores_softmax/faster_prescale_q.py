"""faster (hoped): PyTorch only, scale q by 1/sqrt(d) before the bmm (16 MiB instead of a 256 MiB divide pass; exact for d = 64, a power-of-two scale), then softmax."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        qs = q * (1.0 / math.sqrt(q.shape[-1]))
        return torch.softmax(torch.bmm(qs, k.transpose(1, 2)), dim=-1)
