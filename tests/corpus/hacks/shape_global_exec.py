"""Shape global, obfuscated through exec: the assignment is assembled from pieces and executed.

task: cpu/softmax
expect: rejected shape_globals
"""
import torch
import torch.nn as nn

exec("".join(["d", "im", " = ", "8"]))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)
