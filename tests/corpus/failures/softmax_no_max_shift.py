"""Numerically naive softmax (a bug, not a trick): exp(x) / sum(exp(x)) without subtracting the row max.

Right on N(0, 1) inputs; on large-magnitude inputs exp overflows to inf and inf/inf gives NaN where
the reference is finite.

The flaky gap: softmax outputs on the wide and edge sets are ~0 almost everywhere, so the 64
sampled entries of this wrong output can match the wide set's answer, and the replay test runs
before the nonfinite one (it should also require that the current answer differs at those entries).

task: cpu/softmax
expect: wrong_output nonfinite
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)
