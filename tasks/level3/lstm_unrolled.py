"""LSTM cell unrolled in Python over 64 steps, x (128, 64, 512) fp32, hidden 1024 -> final h (128, 1024).
FLOPs 2*B*(in+hid)*4*hid per step = 1.6 G x 64 = 103 GFLOP; ~6 small kernels per step (launch-bound when unfused)."""
import torch
import torch.nn as nn

batch_size = 128
seq_len = 64
input_size = 512
hidden_size = 1024


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.w_ih = nn.Linear(input_size, 4 * hidden_size)
        self.w_hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x):
        B, T, _ = x.shape
        h = x.new_zeros(B, self.hidden_size)
        c = x.new_zeros(B, self.hidden_size)
        for t in range(T):
            gates = self.w_ih(x[:, t]) + self.w_hh(h)  # (B, 4*hid)
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
