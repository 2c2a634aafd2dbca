"""Linear + ReLU as one addmm (bias folded into the GEMM) and an in-place ReLU on the candidate's own result.

In-place ops on intermediates the candidate allocated itself are fine; only the inputs are off limits.

task: cpu/linear_relu
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())  # (B, out)
        return y.relu_()
