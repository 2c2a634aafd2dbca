"""TF32 toggled natively inside forward from the candidate's sixth call on: the correctness calls (and a watch placed
before the clock, such as the profile) see plain fp32 throughout; every later call, the timed rounds among them,
runs its matmul with TF32 and puts the flag back before it returns.

The op reader (fences.FlagReader) watches one untimed call after the timed rounds, so a toggle that starts anywhere
before the clock stops is read: `backend_flags`.
today: ok ~1x on the CPU without the reader (TF32 changes nothing there)

task: cpu/linear_relu
expect: rejected backend_flags
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Context.h>
void tf32(bool on) { at::globalContext().setAllowTF32CuBLAS(on); }
"""

ext = load_inline(name="corpus_flag_native_late", cpp_sources=CPP, functions=["tf32"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        late = self.calls >= 6
        if late:
            ext.tf32(True)
        try:
            return torch.relu(self.linear(x))
        finally:
            if late:
                ext.tf32(False)
