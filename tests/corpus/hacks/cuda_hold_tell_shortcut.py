"""Telling a timed call from a checked one by the GPU hold: when forward starts with the current stream still
busy (the hold of a timed call), take a shortcut valid on the task's own inputs alone (a degree-6 Taylor series
of exp, within the fp32 tolerance on [0, 1)); otherwise compute exp.

Only timed calls started behind the hold, and their inputs were the task's own draws: the shortcut was never
seen. Now every call starts behind the same hold and timed rounds draw wide and edge inputs too: the shortcut
runs on the correctness gate's wide set and fails there.

task: corpus/exp_uniform
device: cuda
expect: wrong_output values
also: rejected phase_branch
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if torch.cuda.current_stream().query():
            return torch.exp(x)
        y, term = torch.ones_like(x), torch.ones_like(x)
        for k in range(1, 7):
            term = term * x / k
            y = y + term
        return y
