"""cuDNN's flags through torch's own context manager inside forward: `with torch.backends.cudnn.flags(benchmark=True,
allow_tf32=True, ...)` autotunes every convolution of the call and lets it use TF32, and the context puts every flag
back on exit, before forward returns. (On the CPU the flags change nothing but the call is the same.)

Caught by the setter watch (fences.FlagWatch): `backend_flags`.
today: ok ~1x on the CPU before the watch

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
        with torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False, allow_tf32=True):
            return torch.relu(self.linear(x))
