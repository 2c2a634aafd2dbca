"""C++ fused (a + b) * c: one pass over memory instead of two, split across threads with at::parallel_for.

task: cpu/add_mul
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>

torch::Tensor add_mul_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    TORCH_CHECK(a.sizes() == b.sizes() && b.sizes() == c.sizes(), "same shapes expected");
    auto ac = a.contiguous(), bc = b.contiguous(), cc = c.contiguous();
    auto out = torch::empty_like(ac);
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    const float* pc = cc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, ac.numel(), 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = (pa[i] + pb[i]) * pc[i];
    });
    return out;
}
"""

ext = load_inline(name="corpus_cpp_add_mul", cpp_sources=CPP, functions=["add_mul_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return ext.add_mul_fwd(a, b, c)
