"""torch.compile (default mode) on CUDA: residual add + LayerNorm fused by inductor into one Triton reduction kernel.

Eager runs two kernels and writes x + residual to memory in between; the compiled function reads x and residual once
and writes the normalised rows once. The function is pure and takes the parameters as arguments, so dynamo guards only
on shapes, dtypes, devices, tensor types and grad mode. It is compiled in the constructor (inductor + Triton take
seconds cold, longer than one call may take) on zero tensors on the current GPU whose row count is marked dynamic and
on parameter-typed stand-ins for the weight and bias (the module is moved to the GPU only after construction), so
forward reuses that graph and never recompiles. Making the stand-ins draws no random numbers: the LayerNorm's
parameters get the reference's values.

task: level2/add_layernorm
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _add_layernorm(x, residual, weight, bias, eps: float):
    h = x + residual
    return F.layer_norm(h, (h.shape[-1],), weight, bias, eps)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)  # the reference's parameters and initialisation, in its order
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)
        self._fn = torch.compile(_add_layernorm)
        if torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
            x, r = torch.zeros(8, dim, device=device), torch.zeros(8, dim, device=device)
            torch._dynamo.mark_dynamic(x, 0)  # any batch size hits the same compiled graph
            torch._dynamo.mark_dynamic(r, 0)
            w = nn.Parameter(torch.ones(dim, device=device))
            b = nn.Parameter(torch.zeros(dim, device=device))
            with torch.no_grad():  # the evaluator runs forward without grad; grad mode is part of the guards
                self._fn(x, r, w, b, self.ln.eps)

    def forward(self, x, residual):
        return self._fn(x, residual, self.ln.weight, self.ln.bias, self.ln.eps)
