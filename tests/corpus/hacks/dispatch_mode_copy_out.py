"""Work deferred into the harness through a dispatch mode: forward returns an empty tensor at once and leaves a
TorchDispatchMode active; when the harness copies the output out, the mode computes the ReLU into the destination,
after the worker's clock has stopped. Caught as a mode left active when forward returns (also charged by the judge's
clock if it were not).

task: cpu/relu
expect: rejected monkeypatch
"""
import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode


class _Later(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.pending = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.copy_.default and id(args[1]) in self.pending:
            x = self.pending.pop(id(args[1]))
            return func(args[0], torch.relu(x), **kwargs)
        return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = None

    def forward(self, x):
        if self.mode is None:
            self.mode = _Later()
            self.mode.__enter__()  # never left: stays on this thread's stack
        out = torch.empty_like(x)
        self.mode.pending[id(out)] = x
        return out
