# cudal1 best for task level2/attention_scores_softmax: speedup 1.311x, status ok, found at step 0
"""faster (hoped): PyTorch only, torch.baddbmm with beta=0 and alpha=1/sqrt(d) puts the scale into the cuBLAS GEMM (no divide pass over the 256 MiB scores), then softmax."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        bh, t, d = q.shape
        out = q.new_empty(bh, t, k.shape[1])  # beta=0: its contents are never read
        s = torch.baddbmm(out, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d))
        return torch.softmax(s, dim=-1)

