# level1/batchnorm2d: 1.10x eager (framework_ops), sample 6 of ssl
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
            mean, var = bn.running_mean, bn.running_var
        else:
            var, mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False, keepdim=False)
            with torch.no_grad():
                n = x.numel() // x.shape[1]
                bn.num_batches_tracked.add_(1)
                m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
                bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
                bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        scale = bn.weight * torch.rsqrt(var + bn.eps)
        shift = bn.bias - mean * scale
        return torch.addcmul(shift.view(1, -1, 1, 1), x, scale.view(1, -1, 1, 1))