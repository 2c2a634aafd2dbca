"""3-layer MLP 2048 -> 4096 -> 4096 -> 1024 with ReLU between layers, x (2048, 2048) fp32 -> (2048, 1024).
2*B*(2048*4096 + 4096*4096 + 4096*1024) = 120 GFLOP; moves ~230 MiB (16 in, 116 weights, 2x32 hidden, 8 out)."""
import torch
import torch.nn as nn

batch_size = 2048
input_size = 2048
hidden_size = 4096
output_size = 1024


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
