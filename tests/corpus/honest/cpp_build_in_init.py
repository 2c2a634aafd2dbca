"""C++ row softmax built in __init__: per row the max, exp and sum (in double), then one scale; rows in parallel.

build pattern: load_inline inside ModelNew.__init__, kept on the instance (self.ext), the one code models write most

task: cpu/softmax
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>
#include <algorithm>
#include <cmath>

torch::Tensor softmax_fwd(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            float* o = dst + r * cols;
            float m = -INFINITY;
            for (int64_t j = 0; j < cols; ++j) m = std::max(m, row[j]);
            double s = 0.0;
            for (int64_t j = 0; j < cols; ++j) {
                const float e = std::exp(row[j] - m);
                o[j] = e;
                s += e;
            }
            const float inv = static_cast<float>(1.0 / s);
            for (int64_t j = 0; j < cols; ++j) o[j] *= inv;
        }
    });
    return out;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(name="corpus_cpp_softmax_init", cpp_sources=CPP, functions=["softmax_fwd"],
                               extra_cflags=["-O3"], verbose=False)

    def forward(self, x):
        return self.ext.softmax_fwd(x)
