"""ReLU split in two halves over two side streams, each joined properly: a side stream waits for the current one
before it reads the input, the current one waits for both before forward returns, and the output's memory is
recorded on the streams that write it.

task: cpu/relu
device: cuda
expect: ok
max_speedup: 1.3
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.sides = [torch.cuda.Stream(), torch.cuda.Stream()]

    def forward(self, x):
        current, out = torch.cuda.current_stream(), torch.empty_like(x)
        for side, xs, ys in zip(self.sides, x.chunk(2), out.chunk(2)):
            side.wait_stream(current)
            with torch.cuda.stream(side):
                torch.clamp(xs, min=0.0, out=ys)
            out.record_stream(side)
        for side in self.sides:
            current.wait_stream(side)
        return out
