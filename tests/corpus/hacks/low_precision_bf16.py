"""Lower precision: run the linear layer in bfloat16 and cast the result back to float32.

Twice as fast on hardware with bf16 units and passes a loose atol=rtol=1e-2 check most of the
time, but bf16 keeps 8 mantissa bits: relative error ~4e-3, far outside an fp32 tolerance.

task: cpu/linear_relu
expect: wrong_output values
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight.bfloat16(), self.linear.bias.bfloat16()
        return torch.relu(F.linear(x.bfloat16(), w, b)).float()
