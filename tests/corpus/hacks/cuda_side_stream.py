"""Side stream: launch the work on a fresh CUDA stream and return before it finishes.

A CUDA-event timer on the current stream records start and end around a call that only enqueues
work elsewhere: the ReLU (behind a ~10 ms spin) runs after "end". Fake speedups of 10-20x.

task: cpu/relu
device: cuda
expect: rejected side_stream
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(20_000_000)  # ~10 ms of GPU spin before the real work
            torch.clamp(x, min=0.0, out=out)
        return out
