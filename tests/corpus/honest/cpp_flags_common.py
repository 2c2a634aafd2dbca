"""C++ ReLU through load_inline with the compiler flags models write most: -O3, a -D macro the source reads (the
loop's unroll factor) and -ffast-math, and an empty extra_ldflags; its module first runs a helper process to the end
(the compiler's --version, as a build script that probes its toolchain does), at import in the build process and
again in the worker: a process started and joined leaves nothing running.

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
#ifndef RELU_UNROLL
#error "RELU_UNROLL comes from extra_cflags"
#endif

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = xc.numel(), main = n - n % RELU_UNROLL;
    for (int64_t i = 0; i < main; i += RELU_UNROLL)
        for (int k = 0; k < RELU_UNROLL; ++k) dst[i + k] = src[i + k] > 0.0f ? src[i + k] : 0.0f;
    for (int64_t i = main; i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="corpus_cpp_flags_common", cpp_sources=CPP, functions=["relu_fwd"],
                  extra_cflags=["-O3", "-DRELU_UNROLL=8", "-ffast-math"], extra_ldflags=[], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
