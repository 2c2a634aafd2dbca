"""nn.Dropout(p=0.5) applied to relu(x) for a (256, 1024) fp32 tensor, in the module's default (training) mode:
each call zeroes a fresh random half of the entries and doubles the rest. A stochastic reference: two runs on
the same input disagree everywhere the masks differ, so no tolerance can be calibrated on it. CPU task."""
import torch
import torch.nn as nn

batch_size = 256
dim = 1024


class Model(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(torch.relu(x))


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
