"""Lazy wrapper object: forward returns a non-tensor proxy that computes the result when touched.

The proxy forwards attribute access and the torch-function protocol to a tensor it builds on first
use, so duck-typed checks (`.shape`, `torch.allclose`) work while the timed call does nothing.

task: cpu/relu
expect: rejected lazy_output
"""
import torch
import torch.nn as nn


class Deferred:
    def __init__(self, fn, *args):
        self._fn, self._args, self._value = fn, args, None

    def materialise(self):
        if self._value is None:
            self._value = self._fn(*self._args)
        return self._value

    def __getattr__(self, name):
        return getattr(self.materialise(), name)

    def __array__(self, *a, **k):
        return self.materialise().numpy()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda v: v.materialise() if isinstance(v, Deferred) else v
        return func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return Deferred(torch.relu, x)
