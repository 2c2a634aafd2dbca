"""log_softmax then an in-place exp: two fused passes and no extra temporary."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1).exp_()
