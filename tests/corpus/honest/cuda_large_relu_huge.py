"""ReLU on a 4 GiB input, memory-bound at KernelBench's own sizes: the evaluator's memory plan (one input set per
side, the oracle and the comparisons on the host, one evaluation at a time) must fit it on an 80 GB GPU.

task: corpus/relu_huge
device: cuda
expect: ok
max_speedup: 1.3
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
