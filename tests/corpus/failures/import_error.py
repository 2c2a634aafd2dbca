"""Import-time exception: the module imports a package that does not exist.

task: cpu/relu
expect: compile_error import
"""
import torch
import torch.nn as nn

import triton_kernels_that_do_not_exist  # noqa: F401


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
