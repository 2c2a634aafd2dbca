"""No ModelNew: the class is named Model (the model copied the reference and forgot to rename it).

task: cpu/relu
expect: compile_error no_modelnew
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
