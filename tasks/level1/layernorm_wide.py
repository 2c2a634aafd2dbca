"""nn.LayerNorm(8192) over an (8192, 8192) fp32 tensor, random affine. Moves 512 MiB (256 in, 256 out): memory-bound."""
import torch
import torch.nn as nn

batch_size = 8192
normalized_size = 8192


class Model(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        # non-identity affine, so a candidate that drops weight or bias is caught
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, normalized_size)]


def get_init_inputs():
    return [normalized_size]
