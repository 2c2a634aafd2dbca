"""Pre-LN causal transformer block (GPT-2 style: LN, 16-head attention, residual, LN, 4x GELU MLP, residual),
x (8, 1024, 1024) fp32 (batch, tokens, channels) -> same shape. FLOPs: qkv 51.5 G + scores/values 34.4 G
+ proj 17.2 G + MLP 137 G = 240 GFLOP; moves ~1 GiB unfused (params 48 MiB, a 512 MiB attention matrix)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
seq_len = 1024
n_embd = 1024
n_head = 16


class Model(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd)
        for ln in (self.ln_1, self.ln_2):
            nn.init.normal_(ln.weight, 1.0, 0.1)
            nn.init.normal_(ln.bias, 0.0, 0.1)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, H, T, hd)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))  # (B, H, T, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = torch.softmax(att.masked_fill(causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head]
