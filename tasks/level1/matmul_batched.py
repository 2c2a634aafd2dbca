"""Batched matmul torch.bmm, A (64, 512, 1024) @ B (64, 1024, 512) fp32 -> (64, 512, 512).
2*b*M*N*K = 34.4 GFLOP; moves 320 MiB (128 + 128 in, 64 out)."""
import torch
import torch.nn as nn

batch_size = 64
M = 512
K = 1024
N = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return []
