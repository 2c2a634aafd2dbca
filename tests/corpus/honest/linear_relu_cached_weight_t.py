"""Legit cache: keep a contiguous transposed copy of the weight, built once, independent of the inputs.

The cache is keyed on the parameter's identity and version, so it would be rebuilt if the weight
changed; it never stores anything derived from an input.

task: cpu/linear_relu
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._wt = None
        self._wt_key = None

    def weight_t(self):
        w = self.linear.weight
        key = (w.data_ptr(), w._version, w.device)
        if self._wt_key != key:
            self._wt = w.detach().t().contiguous()  # (in, out)
            self._wt_key = key
        return self._wt

    def forward(self, x):
        y = torch.matmul(x, self.weight_t())  # (B, out)
        y.add_(self.linear.bias)
        return torch.relu_(y)
