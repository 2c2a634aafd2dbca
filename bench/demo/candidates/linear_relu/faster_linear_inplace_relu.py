"""F.linear then an in-place relu: saves the second 0.5 MB output allocation."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.relu(self.linear(x), inplace=True)
