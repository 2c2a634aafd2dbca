"""Rectangular matmul C = A @ B, A (8192, 2048), B (2048, 4096) fp32 -> (8192, 4096).
2*M*N*K = 137 GFLOP; moves 224 MiB (64 + 32 in, 128 out)."""
import torch
import torch.nn as nn

M = 8192
K = 2048
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
