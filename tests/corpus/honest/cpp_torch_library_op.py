"""C++ row L2-normalisation registered as a dispatcher op (TORCH_LIBRARY) and called as torch.ops.corpus_rownorm.

build pattern: load_inline(is_python_module=False) without functions=: no pybind module, the library is loaded with
torch.ops.load_library and load_inline returns its path; the op is called through torch.ops.NAMESPACE.fn

task: cpu/loop_rownorm
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/library.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor rownorm(const torch::Tensor& x) {
    TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "2-D float32 expected");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * cols;
            double ss = 0.0;
            for (int64_t j = 0; j < cols; ++j) ss += double(row[j]) * double(row[j]);
            const float norm = static_cast<float>(std::sqrt(ss));
            float* o = dst + r * cols;
            for (int64_t j = 0; j < cols; ++j) o[j] = row[j] / norm;  // a division, as the reference: 0/0 is NaN
        }
    });
    return out;
}

TORCH_LIBRARY(corpus_rownorm, m) {
    m.def("rownorm(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(corpus_rownorm, CPU, m) {
    m.impl("rownorm", &rownorm);
}
"""

LIB_PATH = load_inline(name="corpus_cpp_rownorm_op", cpp_sources=CPP, is_python_module=False,
                       extra_cflags=["-O3"], verbose=False)  # a str: the .so's path


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.ops.corpus_rownorm.rownorm(x)
