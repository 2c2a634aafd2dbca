"""slower: batch statistics from float64 sums of x and x*x over (N, H, W) (two reduction passes plus a squared temporary), var = E[x^2] - mean^2 in float64, then x * scale + shift."""
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
        if not bn.training:
            mean, var = bn.running_mean.double(), bn.running_var.double()
        else:
            n = x.numel() // x.shape[1]
            s1 = x.sum(dim=(0, 2, 3), dtype=torch.float64)
            s2 = torch.square(x).sum(dim=(0, 2, 3), dtype=torch.float64)
            mean = s1 / n
            var = (s2 / n - mean * mean).clamp_min(0.0)
            with torch.no_grad():
                bn.num_batches_tracked.add_(1)
                m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
                bn.running_mean.mul_(1 - m).add_(mean.float(), alpha=m)
                bn.running_var.mul_(1 - m).add_((var * (n / max(n - 1, 1))).float(), alpha=m)
        inv = torch.rsqrt(var + bn.eps)
        scale = (bn.weight.double() * inv).float().view(1, -1, 1, 1)
        shift = (bn.bias.double() - mean * bn.weight.double() * inv).float().view(1, -1, 1, 1)
        return x * scale + shift
