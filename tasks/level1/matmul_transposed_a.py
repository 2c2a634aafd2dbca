"""Matmul with a transposed operand C = A.T @ B, A (2048, 4096) given as (K, M), B (2048, 4096) fp32 -> (4096, 4096).
2*M*N*K = 68.7 GFLOP; moves 128 MiB (32 + 32 in, 64 out)."""
import torch
import torch.nn as nn

M = 4096
K = 2048
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
