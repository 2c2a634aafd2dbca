"""slower: PyTorch only, mean(logsumexp(x, 1) - x.gather(1, t)): never writes the log-softmax matrix, but torch.logsumexp is composite (amax, subtract, exp, sum) and materialises two 512 MiB temporaries."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        picked = logits.gather(1, targets.unsqueeze(1)).squeeze(1)
        return (torch.logsumexp(logits, dim=1) - picked).mean()
