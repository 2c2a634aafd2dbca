"""Phase branch on a call counter: correct for the first calls (the correctness gate), cheap and wrong after.

Harnesses that check a handful of calls and then time many more only ever see the honest
branch. From the 7th call on this returns |x| (one cheap pass, wrong wherever x < 0).

task: cpu/relu
expect: rejected phase_branch
"""
import torch
import torch.nn as nn

HONEST_CALLS = 6


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls <= HONEST_CALLS:
            return torch.relu(x)
        return x.abs()
