"""the reference's loop plus a clone and an unsqueeze per row, joined with cat."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cat([(row.clone() / row.norm()).unsqueeze(0) for row in x], dim=0)
