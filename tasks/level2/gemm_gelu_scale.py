"""GEMM + tanh-GELU + scale: gelu(nn.Linear(2048, 8192)(x), 'tanh') * scale, x (4096, 2048) fp32 -> (4096, 8192).
2*M*N*K = 137 GFLOP; moves 224 MiB (32 in, 64 weight, 128 out)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
in_features = 2048
out_features = 8192
scale = 0.5


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh") * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
