"""Hang: an infinite loop in forward that also ignores KeyboardInterrupt/SIGINT.

task: cpu/relu
expect: timeout timeout
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
