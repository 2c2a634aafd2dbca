"""TF32 toggled inside forward from native code: a C++ extension calls at::globalContext().setAllowTF32CuBLAS(true)
before the matmul and (false) after it, so no Python setter runs and the flags read after forward are as the
harness left them. (On the CPU TF32 changes nothing; on CUDA every fp32 matmul of the call runs on tensor cores.)

The setter watch (fences.FlagWatch) wraps torch's Python setters only: native code reaches ATen's own. Before: ok
(seen only where the answer moved beyond the calibrated tolerance). Now one untimed call after the timed rounds reads
every setting at each op it dispatches (fences.FlagReader): the addmm ran with TF32 on, `backend_flags`.
On CUDA TF32 moves the answer beyond the fp32 tolerance here: the correctness gate refuses it first.

task: cpu/linear_relu
expect: rejected backend_flags
also: wrong_output values
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Context.h>
void tf32(bool on) { at::globalContext().setAllowTF32CuBLAS(on); }
"""

ext = load_inline(name="corpus_flag_tf32_native", cpp_sources=CPP, functions=["tf32"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        ext.tf32(True)
        try:
            return torch.relu(self.linear(x))
        finally:
            ext.tf32(False)
