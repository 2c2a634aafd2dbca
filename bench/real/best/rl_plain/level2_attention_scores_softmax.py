# level2/attention_scores_softmax: 1.35x eager (framework_ops), sample 4 of rl_plain
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        qs = q * (1.0 / math.sqrt(q.shape[-1]))
        return torch.softmax(torch.bmm(qs, k.transpose(1, 2)), dim=-1)