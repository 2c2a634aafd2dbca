"""wrong: folds the batch norm into the conv weights and bias with the running statistics (the eval-mode fold), but the model runs in training mode where batch statistics are used, so the normalisation is wrong."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn, conv = self.bn, self.conv
        scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        w = conv.weight * scale.view(-1, 1, 1, 1)
        b = (conv.bias - bn.running_mean) * scale + bn.bias
        return F.relu(F.conv2d(x, w, b, conv.stride, conv.padding))
