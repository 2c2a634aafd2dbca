"""GEMM + BatchNorm1d (training mode) + tanh: tanh(bn(nn.Linear(2048, 4096)(x))), x (8192, 2048) fp32 -> (8192, 4096).
2*M*N*K = 137 GFLOP; moves 224 MiB (64 in, 32 weight, 128 out)."""
import torch
import torch.nn as nn

batch_size = 8192
in_features = 2048
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        return torch.tanh(self.bn(self.linear(x)))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
