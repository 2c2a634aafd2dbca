"""slower: LayerNorm over the last dim as F.group_norm with a single group on an (N, D, 1) view, whose per-channel affine is exactly LayerNorm's per-column weight and bias; group_norm's kernels are tuned for many small groups, not 8192 rows of 8192."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        d = x.shape[-1]
        y = F.group_norm(x.reshape(-1, d, 1), 1, self.ln.weight, self.ln.bias, self.ln.eps)
        return y.view(x.shape)
