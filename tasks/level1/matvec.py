"""Matrix-vector product y = A @ x, A (16384, 8192), x (8192, 1) fp32 -> (16384, 1).
2*M*K = 0.27 GFLOP; moves 512 MiB (the matrix): memory-bound."""
import torch
import torch.nn as nn

M = 16384
K = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, x):
        return torch.matmul(A, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
