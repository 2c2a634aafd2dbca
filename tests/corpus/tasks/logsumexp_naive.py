"""Row-wise log-sum-exp of a (256, 1024) fp32 tensor written naively: log(sum(exp(x), -1)) -> (256,), with no
max shift, so a row with an entry above ~88.7 overflows to inf in fp32 (its float64 value is finite). A
reference that is finite on its own inputs but not on large ones: the evaluator must refuse it, not calibrate
its tolerance on it. CPU task."""
import torch
import torch.nn as nn

batch_size = 256
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log(torch.sum(torch.exp(x), dim=-1))


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
