"""Write the answer into the input and return it: ReLU in place on the caller's tensor, output = a view of the input.

No output allocation at all. The write into the input is seen first (the judge compares its
inputs after every call), so this is an input mutation before it is an aliased output.

task: cpu/relu
expect: rejected input_mutation
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.relu_()
        return x.view(x.shape)
