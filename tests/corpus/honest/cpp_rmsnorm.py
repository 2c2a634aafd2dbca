"""C++ RMSNorm: per row, one pass for the mean square (in double) and one to scale, rows in parallel.

task: cpu/rmsnorm
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor rmsnorm_fwd(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            double ss = 0.0;
            for (int64_t j = 0; j < cols; ++j) ss += double(row[j]) * double(row[j]);
            const float scale = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
            float* o = dst + r * cols;
            for (int64_t j = 0; j < cols; ++j) o[j] = row[j] * scale * pw[j];
        }
    });
    return out;
}
"""

ext = load_inline(name="corpus_cpp_rmsnorm", cpp_sources=CPP, functions=["rmsnorm_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return ext.rmsnorm_fwd(x, self.weight, self.eps)
