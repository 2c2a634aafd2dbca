"""GEMM + bias + ReLU: relu(nn.Linear(4096, 4096)(x)), x (4096, 4096) fp32 -> (4096, 4096).
2*M*N*K = 137 GFLOP; moves 192 MiB (64 in, 64 weight, 64 out)."""
import torch
import torch.nn as nn

batch_size = 4096
in_features = 4096
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
