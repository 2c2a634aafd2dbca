"""faster (hoped): in training mode the batch mean absorbs the conv bias, so the conv runs without bias (no separate bias-add pass over the 128 MiB output), then F.batch_norm with batch statistics and an in-place ReLU; the running mean gets the bias added back."""
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
        if not bn.training:
            return torch.relu(bn(conv(x)))
        y = F.conv2d(x, conv.weight, None, conv.stride, conv.padding)
        bn.num_batches_tracked.add_(1)
        m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
        y = F.batch_norm(y, bn.running_mean, bn.running_var, bn.weight, bn.bias, True, m, bn.eps)
        with torch.no_grad():
            bn.running_mean.add_(conv.bias, alpha=m)  # the mean the biased conv output would have had
        return y.relu_()
