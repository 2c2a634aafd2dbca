"""C++ ReLU through load_inline whose module first runs a helper process to the end (the compiler's --version, as a
build script that probes its toolchain does): the helper is started and joined at import, in the build process and
again in the worker, and nothing it started outlives it.

task: cpu/relu
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import os
import subprocess

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# the compiler torch builds with (CXX, else c++), asked its version and waited for
subprocess.run([os.environ.get("CXX", "c++"), "--version"], check=True, capture_output=True, timeout=60)

CPP = r"""
torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="corpus_cpp_build_spawns_helpers", cpp_sources=CPP, functions=["relu_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
