"""Cross-entropy loss (mean) of logits (16384, 8192) fp32 against int64 labels (16384,) -> scalar.
Moves 512 MiB in (the logits): memory-bound."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16384
num_classes = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
