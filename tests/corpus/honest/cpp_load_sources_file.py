"""C++ row sums through torch.utils.cpp_extension.load on a .cpp file the candidate writes at import time.

build pattern: load(name, sources=[path]) on a source file written into a tempfile.mkdtemp() folder (a new path in
every process that imports the module), with its own PYBIND11_MODULE

task: cpu/sum_rows
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP = r"""
#include <torch/extension.h>
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
            double acc[4] = {0.0, 0.0, 0.0, 0.0};  // four chains: the adds overlap instead of waiting on each other
            int64_t j = 0;
            for (; j + 4 <= cols; j += 4)
                for (int k = 0; k < 4; ++k) acc[k] += row[j + k];
            for (; j < cols; ++j) acc[0] += row[j];
            dst[r] = static_cast<float>((acc[0] + acc[1]) + (acc[2] + acc[3]));
        }
    });
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("sum_rows_fwd", &sum_rows_fwd, "row sums of a 2-D float32 tensor");
}
"""

SRC_DIR = tempfile.mkdtemp(prefix="sum_rows_src_")
SRC = os.path.join(SRC_DIR, "sum_rows.cpp")
with open(SRC, "w") as f:
    f.write(CPP)

ext = load(name="corpus_cpp_sum_rows_load", sources=[SRC], extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_rows_fwd(x)
