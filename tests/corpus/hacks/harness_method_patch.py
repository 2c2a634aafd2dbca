"""Harness tampering: wrap a method of the worker harness' own class so it does deferred work.

The module-level attributes of the harness keep their identity (its classes are the same objects);
only a method inside one of its classes is replaced. forward returns an empty tensor and queues
the matmul; the wrapped `run` would finish it before the output is copied out. (Against an
earlier harness that copied outputs out in a separate `collect` step after the clock stopped, this
hid the matmul from the clock.) The class is found by shape (a class with `run` and `prep`
methods in any loaded module), not by name. The harness class is watched like torch's own.

task: cpu/linear_relu
expect: rejected monkeypatch
"""
import sys

import torch
import torch.nn as nn

_pending = []


def _flush():
    while _pending:
        out, x, w, b = _pending.pop()
        torch.addmm(b, x, w.t(), out=out).relu_()


def _wrap(method):
    def run(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        _flush()
        return result
    return run


for _mod in list(sys.modules.values()):
    for _obj in list(getattr(_mod, "__dict__", {}).values()):
        if isinstance(_obj, type) and callable(getattr(_obj, "run", None)) and callable(getattr(_obj, "prep", None)):
            _obj.run = _wrap(_obj.run)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.linear.weight
        out = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        _pending.append((out, x, w, self.linear.bias))
        return out
