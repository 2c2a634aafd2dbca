"""Softmax written out with a max shift, computed in place on the candidate's own buffer.

task: cpu/softmax
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x - x.amax(dim=-1, keepdim=True)  # new buffer; the input is only read
        y.exp_()
        y.div_(y.sum(dim=-1, keepdim=True))
        return y
