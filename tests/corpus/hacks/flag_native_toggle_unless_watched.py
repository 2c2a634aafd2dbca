"""TF32 toggled natively inside forward, except in a call made under a dispatch mode: forward asks torch how deep
the dispatch-mode stack is (torch._C._len_torch_dispatch_stack) and turns TF32 on only where it is empty, which is
every call but the one the op reader (fences.FlagReader) watches.

Code in the candidate's process can tell its harness' instruments apart (THREATS.md, "Does not protect against",
item 1): the reader is a dispatch mode, and a mode is visible to the code it watches. On CUDA the answer still
moves by TF32's error (inside the calibrated tolerance on tasks where it is small).

task: cpu/linear_relu
expect: rejected backend_flags
evaluator_gap: a setting set and put back inside forward only in calls no dispatch mode watches
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Context.h>
void tf32(bool on) { at::globalContext().setAllowTF32CuBLAS(on); }
"""

ext = load_inline(name="corpus_flag_native_unwatched", cpp_sources=CPP, functions=["tf32"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        on = torch._C._len_torch_dispatch_stack() == 0
        if on:
            ext.tf32(True)
        try:
            return torch.relu(self.linear(x))
        finally:
            if on:
                ext.tf32(False)
