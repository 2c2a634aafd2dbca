"""faster (hoped): PyTorch only, F.mse_loss: one fused (p - t)^2 kernel and a mean, 1 GiB of traffic instead of the reference's 1.5 GiB."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.mse_loss(predictions, targets, reduction="mean")
