"""relu applied before the bias is added: negative pre-activations keep their bias."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(x @ self.linear.weight.t()) + self.linear.bias
