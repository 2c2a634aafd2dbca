"""C++ row sums: one accumulator per row, rows split across threads with at::parallel_for.

Accumulates in double so the result is at least as accurate as PyTorch's pairwise float sum.

task: cpu/sum_rows
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>

torch::Tensor sum_rows_fwd(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "2-D float32 expected");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            double acc = 0.0;
            for (int64_t j = 0; j < cols; ++j) acc += row[j];
            dst[r] = static_cast<float>(acc);
        }
    });
    return out;
}
"""

ext = load_inline(name="corpus_cpp_sum_rows", cpp_sources=CPP, functions=["sum_rows_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_rows_fwd(x)
