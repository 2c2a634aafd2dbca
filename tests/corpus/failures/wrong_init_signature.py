"""Wrong __init__ signature: the task's Model(in_features, out_features) becomes ModelNew(features).

task: cpu/linear_relu
expect: compile_error signature
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.linear(x))
