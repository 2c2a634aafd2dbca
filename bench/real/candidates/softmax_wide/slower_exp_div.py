"""slower: PyTorch only, e = exp(x - amax(x)); e / e.sum(): four separate kernels (amax, sub+exp via exp_, sum, div) and a 256 MiB temporary instead of one fused softmax."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp_()
        return e / e.sum(dim=-1, keepdim=True)
