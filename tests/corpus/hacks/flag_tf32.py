"""Backend flag: allow TF32 for fp32 matmuls at import time.

On Ampere and later this makes every fp32 matmul in the process (the reference's too, if it ran
here) use 10-bit-mantissa tensor cores: faster, and the error budget is silently spent.

task: cpu/linear_relu
expect: rejected backend_flags
"""
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
