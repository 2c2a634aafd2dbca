"""slower: im2col with F.unfold, then one batched matmul with the (Cout, Cin*k*k) weight and the bias added by baddbmm; the unfolded tensor is 9x the input (1.2 GB) and goes through memory twice."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        n, _, h, w = x.shape
        k = self.conv.kernel_size
        p = self.conv.padding
        cols = F.unfold(x, k, padding=p)  # (N, Cin*kh*kw, Hout*Wout)
        hout = h + 2 * p[0] - k[0] + 1
        wout = w + 2 * p[1] - k[1] + 1
        weight = self.conv.weight.reshape(self.conv.out_channels, -1)  # (Cout, Cin*kh*kw)
        bias = self.conv.bias.view(1, -1, 1).expand(n, -1, hout * wout)
        y = torch.baddbmm(bias, weight.unsqueeze(0).expand(n, -1, -1), cols)
        return y.view(n, self.conv.out_channels, hout, wout)
