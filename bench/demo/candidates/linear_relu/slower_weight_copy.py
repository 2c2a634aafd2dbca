"""copies the transposed weight (1 MB) every call and adds the bias in a separate pass."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        wt = self.linear.weight.t().contiguous()  # (in, out), a fresh copy per call
        return torch.relu(torch.matmul(x, wt) + self.linear.bias)
