"""Backend flag: torch.set_float32_matmul_precision('medium') inside forward.

'medium' lets fp32 matmuls run in bf16 internally where the backend supports it.

task: cpu/linear_relu
expect: rejected backend_flags
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.set_float32_matmul_precision("medium")
        return torch.relu(self.linear(x))
