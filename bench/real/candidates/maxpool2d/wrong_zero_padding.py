"""wrong: pads explicitly with F.pad (default value 0) and pools with padding=0, so border windows whose real values are all negative return 0 instead of their maximum."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        p = self.pool
        pad = p.padding
        xp = F.pad(x, (pad, pad, pad, pad))
        return F.max_pool2d(xp, p.kernel_size, stride=p.stride, padding=0)
