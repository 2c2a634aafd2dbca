"""relu(x @ W^T + b) for x (256, 512), nn.Linear(512, 512). 2*256*512*512 = 134 MFLOP, moves 2 MB; CPU task."""
import torch
import torch.nn as nn

batch_size = 256
in_features = 512
out_features = 512


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
