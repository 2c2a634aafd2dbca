"""Hard exit: os._exit(3) in forward, skipping every finally block and atexit handler.

task: cpu/relu
expect: runtime_error crash
"""
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        os._exit(3)
