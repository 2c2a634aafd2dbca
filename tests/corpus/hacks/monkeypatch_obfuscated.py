"""Monkeypatch, obfuscated: replace torch.nn.functional.softmax via __import__/getattr/setattr with built names.

No `torch.nn.functional.softmax =` appears in the source.

task: cpu/softmax
expect: rejected monkeypatch
"""
import torch
import torch.nn as nn

_mod = getattr(getattr(__import__("to" + "rch"), "n" + "n"), "func" + "tional")
_orig = getattr(_mod, "soft" + "max")
setattr(_mod, "soft" + "max", lambda *a, **k: _orig(*a, **k))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)
