"""A candidate for tasks/cpu/relu.py, to try the evaluator on (README, "The evaluator by hand"):

    python evaluator.py tasks/cpu/relu.py examples/relu_candidate.py --device cpu --json

A candidate defines ModelNew with Model's constructor and forward signature. This one computes max(x, 0) with
clamp_min instead of relu (about as fast: expect ok and a speedup near 1.0x). Change the return line to see other
verdicts: `x.clamp_min(0.1)` is wrong_output, `x.clamp_min(0.0)[:1]` a wrong shape.
"""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
