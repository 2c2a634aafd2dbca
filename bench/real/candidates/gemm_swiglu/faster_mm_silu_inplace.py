"""faster (hoped): PyTorch only, two torch.mm, then silu in place on the gate GEMM's own output and the product in place: no temporaries beyond the two GEMM outputs; expected to tie."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        gate = torch.mm(x, self.w1.weight.t())
        up = torch.mm(x, self.w3.weight.t())
        return F.silu(gate, inplace=True).mul_(up)
