"""Replay of a stale output that differs from the reference's answer in its low bits: the first call's row sums are
computed once in 2^-16 fixed point (an order-independent, deterministic sum; its rounding is well inside the
tolerance) and every later call returns a copy of them. On the GPU a CUDA graph that replays its first input does
the same (its kernels round differently from the reference's eager ones); a replay that does not repeat the
earlier answer bit for bit must still be named as a replay, not only as a wrong answer.

task: cpu/sum_rows
expect: rejected output_replay
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._first = None

    def forward(self, x):
        if self._first is None:
            fixed = torch.round(x.double() * 65536).to(torch.int64).sum(dim=1)
            self._first = (fixed.double() / 65536).float()
        return self._first.clone()
