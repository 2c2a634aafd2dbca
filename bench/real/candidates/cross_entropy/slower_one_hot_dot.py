"""slower: PyTorch only, -(log_softmax(x) * one_hot(t)).sum(1).mean(): a dense 512 MiB one-hot mask and an elementwise product instead of a gather."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logp = torch.log_softmax(logits, dim=1)
        mask = F.one_hot(targets, num_classes=logits.shape[1]).to(logp.dtype)
        return -(logp * mask).sum(dim=1).mean()
