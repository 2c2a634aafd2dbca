"""faster (hoped): PyTorch only, the linear bias dropped from the GEMM (training-mode BN subtracts the batch mean, so it cancels), var_mean for the batch stats, one addcmul for the affine and tanh_ in place on it; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn = self.bn
        h = torch.mm(x, self.linear.weight.t())  # x W^T, without the bias
        if bn.training or bn.running_mean is None:
            var, mean = torch.var_mean(h, dim=0, correction=0)  # biased variance normalises, as BatchNorm does
            if bn.training and bn.track_running_stats:
                bn.num_batches_tracked.add_(1)
                f = 1.0 / float(bn.num_batches_tracked) if bn.momentum is None else bn.momentum
                n = h.shape[0]
                with torch.no_grad():  # the buffers see the stats of x W^T + b, with the unbiased variance
                    bn.running_mean.mul_(1.0 - f).add_(mean + self.linear.bias, alpha=f)
                    bn.running_var.mul_(1.0 - f).add_(var * (n / (n - 1)), alpha=f)
        else:
            mean, var = bn.running_mean - self.linear.bias, bn.running_var
        scale = bn.weight * torch.rsqrt(var + bn.eps)
        shift = bn.bias - mean * scale
        return torch.addcmul(shift, h, scale).tanh_()
