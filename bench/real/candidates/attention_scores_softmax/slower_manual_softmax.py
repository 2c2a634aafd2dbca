"""slower: PyTorch only, softmax spelled out (amax, subtract, exp, sum, divide) after the scaled bmm: about five passes over the 256 MiB scores instead of one fused softmax."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        s = torch.bmm(q, k.transpose(1, 2)).div_(math.sqrt(q.shape[-1]))
        s = s.sub_(s.amax(dim=-1, keepdim=True)).exp_()
        return s.div_(s.sum(dim=-1, keepdim=True))
