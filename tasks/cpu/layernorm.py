"""nn.LayerNorm(1024) over a (256, 1024) fp32 tensor. Moves 2 MB (1 in, 1 out); CPU task."""
import torch
import torch.nn as nn

batch_size = 256
normalized_size = 1024


class Model(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, normalized_size)]


def get_init_inputs():
    return [normalized_size]
