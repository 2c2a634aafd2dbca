"""SwiGLU gate: silu(x @ W1^T) * (x @ W3^T), x (4096, 2048), W1 and W3 (4096, 2048) fp32, no bias -> (4096, 4096).
2 * 2*M*N*K = 137 GFLOP; moves 160 MiB (32 in, 2x32 weights, 64 out)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 2048
hidden_dim = 4096


class Model(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return F.silu(self.w1(x)) * self.w3(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, hidden_dim]
