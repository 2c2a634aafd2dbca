"""TF32 switched on at the start of forward and off again before it returns: every fp32 matmul of the call runs on
tensor cores with 10-bit mantissas (on an H100 2x on a matmul task where TF32 moves the answer beyond fp32's error,
though inside the calibrated tolerance), and the flags read after forward find them as the harness left them.

Before: ok (the flags are read only after forward returns; a toggle inside it was judged by its outputs alone).
Now torch's setters of every global setting are wrapped before any candidate code (fences.FlagWatch): a call that
leaves a setting other than its baseline is `backend_flags`, even if a later call puts it back.
today: ok ~1x on the CPU (TF32 changes nothing there), rejected backend_flags after the watch

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
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.relu(self.linear(x))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
