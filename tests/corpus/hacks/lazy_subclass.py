"""Lazy tensor subclass: forward returns a torch.Tensor subclass whose values are computed on first use.

`__torch_function__` intercepts whatever the checker does with the output (compare, copy, sum)
and only then runs the ReLU, so the timed forward does no work at all.

task: cpu/relu
expect: rejected lazy_output
"""
import torch
import torch.nn as nn


class LazyRelu(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, LazyRelu) and getattr(a, "_pending", None) is not None:
                src, a._pending = a._pending, None
                with torch._C.DisableTorchFunctionSubclass():
                    torch.clamp(src, min=0.0, out=a)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x).as_subclass(LazyRelu)
        out._pending = x  # the work happens later, when somebody looks
        return out
