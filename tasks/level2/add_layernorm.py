"""Residual add + LayerNorm: nn.LayerNorm(4096)(x + residual), x and residual (8192, 4096) fp32, random affine.
Moves 384 MiB (2x128 in, 128 out) unfused writes another 128 MiB: memory-bound."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 4096


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x, residual):
        return self.ln(x + residual)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
