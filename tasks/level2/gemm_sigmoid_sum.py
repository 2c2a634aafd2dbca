"""GEMM + sigmoid + row sum: sigmoid(nn.Linear(8192, 4096)(x)).sum(1), x (2048, 8192) fp32 -> (2048,).
2*M*N*K = 137 GFLOP; moves 192 MiB (64 in, 128 weight; the (2048, 4096) intermediate need not be stored)."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 8192
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)).sum(dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
