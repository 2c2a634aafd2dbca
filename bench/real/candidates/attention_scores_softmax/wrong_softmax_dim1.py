"""wrong: PyTorch only, the scaled scores are right but the softmax is taken over dim=1 (the query axis) instead of the key axis."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        s = torch.bmm(q, k.transpose(1, 2)).div_(math.sqrt(q.shape[-1]))
        return torch.softmax(s, dim=1)
