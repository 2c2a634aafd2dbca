"""C++ LayerNorm built lazily at the first forward: per row mean and variance in double, then scale and shift.

build pattern: load_inline at the first forward call (if self.ext is None: self.ext = load_inline(...))

task: cpu/layernorm
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            double s = 0.0;
            for (int64_t j = 0; j < cols; ++j) s += row[j];
            const double mean = s / cols;
            double ss = 0.0;
            for (int64_t j = 0; j < cols; ++j) { const double d = row[j] - mean; ss += d * d; }
            const float rstd = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
            const float m = static_cast<float>(mean);
            float* o = dst + r * cols;
            for (int64_t j = 0; j < cols; ++j) o[j] = (row[j] - m) * rstd * pw[j] + pb[j];
        }
    });
    return out;
}
"""


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        self.ext = None  # built on first use, so constructing the model costs nothing

    def forward(self, x):
        if self.ext is None:
            self.ext = load_inline(name="corpus_cpp_layernorm_lazy", cpp_sources=CPP, functions=["layernorm_fwd"],
                                   extra_cflags=["-O3"], verbose=False)
        return self.ext.layernorm_fwd(x, self.ln.weight, self.ln.bias, self.ln.eps)
