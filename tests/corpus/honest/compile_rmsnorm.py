"""torch.compile (default mode) of an RMSNorm rewrite: inductor fuses square, mean, rsqrt and both products into one loop.

The compiled function is pure (tensors in, a new tensor out) and takes the weight as an argument, so dynamo guards
only on shapes, dtypes, tensor types and grad mode. It is compiled in the constructor (inductor generates and builds
C++ for the CPU: ~15 s cold on 2 cores, longer than a call may take), on a zero batch whose row count is marked
dynamic, so forward reuses that graph and never recompiles. Making the zero batch draws no random numbers, so the
weight gets the same values as the reference's.

task: cpu/rmsnorm
expect: ok
"""
import torch
import torch.nn as nn


def _rmsnorm(x, weight, eps: float):
    return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * weight


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)  # the reference's only random draw
        self._fn = torch.compile(_rmsnorm)
        rows = torch.zeros(8, dim)
        torch._dynamo.mark_dynamic(rows, 0)  # any batch size hits the same compiled graph
        with torch.no_grad():  # the evaluator runs forward without grad; grad mode is part of dynamo's guards
            self._fn(rows, self.weight, self.eps)

    def forward(self, x):
        return self._fn(x, self.weight, self.eps)
