"""Uninitialised output: torch.empty_like, hoping the allocator hands back the reference's freed result.

When reference and candidate share a process and the reference ran just before, its freed output
block is often the next block of that size, so "empty" already holds the right answer. In a
separate process it holds whatever the candidate's own allocator had there.

task: cpu/relu
expect: wrong_output values
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.empty_like(x)
