"""Attention probabilities softmax(Q @ K^T / sqrt(d)), Q and K (64, 1024, 64) fp32 (batch*heads, tokens, head dim)
-> (64, 1024, 1024). 2*b*T*T*d = 8.6 GFLOP; moves 288 MiB (2x16 in, 256 out)."""
import math

import torch
import torch.nn as nn

batch_heads = 64
seq_len = 1024
head_dim = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])  # (BH, T, T)
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(batch_heads, seq_len, head_dim), torch.randn(batch_heads, seq_len, head_dim)]


def get_init_inputs():
    return []
