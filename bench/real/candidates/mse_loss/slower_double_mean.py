"""slower: PyTorch only, (p - t) squared in place, cast to float64 (a 512 MiB copy) and averaged in double: more accurate, more traffic."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        d = predictions - targets
        d.mul_(d)
        return d.double().mean().to(predictions.dtype)
