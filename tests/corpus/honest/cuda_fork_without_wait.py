"""Racy but correct multi-stream code: the ReLU runs on a side stream that never waits for the current stream, then
the current stream waits for it (joined at the end, not at the start). Here the inputs are ready before forward, so
the answer is right. Timed behind a stream-local sleep this would be free (the side stream does its work while the
current stream sleeps, before the first event); behind the evaluator's hold, which fills every SM, it cannot start
early and scores what the reference's ReLU scores.

task: level1/relu_large
device: cuda
expect: ok
same_as_reference: true
max_speedup: 1.1
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x):
        if not x.is_cuda:
            return torch.relu(x)
        if self.side is None:
            self.side = torch.cuda.Stream()
        with torch.cuda.stream(self.side):  # no self.side.wait_stream(current): starts as soon as it is queued
            y = torch.relu(x)
        torch.cuda.current_stream().wait_stream(self.side)
        return y
