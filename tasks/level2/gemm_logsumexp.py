"""GEMM + logsumexp: torch.logsumexp(nn.Linear(1024, 16384)(x), dim=1), x (4096, 1024) fp32 -> (4096,).
2*M*N*K = 137 GFLOP; moves 80 MiB (16 in, 64 weight) plus a 256 MiB intermediate when not fused."""
import torch
import torch.nn as nn

batch_size = 4096
in_features = 1024
out_features = 16384


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.logsumexp(self.linear(x), dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
