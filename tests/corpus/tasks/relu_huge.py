"""ReLU over a (65536, 16384) fp32 tensor: 4 GiB in, 4 GiB out, as KernelBench's level 1 sizes its elementwise ops.
Too large for two input sets per side, a float64 oracle on the device and two evaluations at once on an 80 GB GPU:
the evaluator's memory plan must make it fit. GPU task."""
import torch
import torch.nn as nn

batch_size = 65536
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
