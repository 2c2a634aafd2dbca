"""Square matmul C = A @ B, A and B (4096, 4096) fp32. 2*N^3 = 137 GFLOP; moves 192 MiB (2x64 in, 64 out)."""
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
