"""wrong: normalises each (sample, channel) plane with its own mean and variance (dims (2, 3), instance-norm style) instead of the batch statistics over (0, 2, 3)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn = self.bn
        var, mean = torch.var_mean(x, dim=(2, 3), keepdim=True, correction=0)
        y = (x - mean) * torch.rsqrt(var + bn.eps)
        return y * bn.weight.view(1, -1, 1, 1) + bn.bias.view(1, -1, 1, 1)
