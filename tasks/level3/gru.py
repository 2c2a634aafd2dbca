"""2-layer nn.GRU(256 -> 512, batch_first) over x (64, 128, 256) fp32 with initial state h0 (2, 64, 512)
-> outputs (64, 128, 512). FLOPs 2*3*(in+hid)*hid*B*T per layer: 19.3 + 25.8 = 45 GFLOP, 128 sequential steps.
h0 goes through tanh first, into (-1, 1) where a GRU's state lives: the correctness check's edge inputs scale 1% of
entries x64, and a raw state of ~250 put the reference 5.5e-2 off float64 on an H100, above the tolerance ceiling
(bench/RESULTS.md, 7fdd604, H100)."""
import torch
import torch.nn as nn

batch_size = 64
seq_len = 128
input_size = 256
hidden_size = 512
num_layers = 2


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)

    def forward(self, x, h0):
        output, _ = self.gru(x, torch.tanh(h0))
        return output


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size), torch.randn(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
