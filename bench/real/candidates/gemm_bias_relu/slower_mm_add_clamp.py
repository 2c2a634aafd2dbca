"""slower: PyTorch only, a bias-less torch.mm, then the bias and the clamp as two separate in-place passes over the 64 MiB output."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.mm(x, self.linear.weight.t())
        return y.add_(self.linear.bias).clamp_min_(0.0)
