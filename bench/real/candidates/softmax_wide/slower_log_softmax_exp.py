"""slower: PyTorch only, exp(log_softmax(x)): the fused log-softmax kernel plus a second full elementwise pass (in-place exp_) over the 256 MiB output."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1).exp_()
