"""C++ (a + b) * c from two extensions: an elementwise add built at import, a multiply built in __init__.

build pattern: two different load_inline extensions in one candidate, one at module level and one in __init__,
both called in forward

task: cpu/add_mul
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ADD_CPP = r"""
#include <ATen/Parallel.h>

torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes() && a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "two float32 tensors of one shape expected");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, ac.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = pa[i] + pb[i];
    });
    return out;
}
"""

MUL_CPP = r"""
#include <ATen/Parallel.h>

// s *= c in place: s is the add's fresh output, owned by this call
torch::Tensor mul_into(torch::Tensor s, torch::Tensor c) {
    TORCH_CHECK(s.is_contiguous() && s.sizes() == c.sizes() && c.scalar_type() == torch::kFloat32,
                "a contiguous float32 tensor and a factor of its shape expected");
    auto cc = c.contiguous();
    float* ps = s.data_ptr<float>();
    const float* pc = cc.data_ptr<float>();
    at::parallel_for(0, s.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ps[i] *= pc[i];
    });
    return s;
}
"""

add_ext = load_inline(name="corpus_cpp_two_ext_add", cpp_sources=ADD_CPP, functions=["add_fwd"],
                      extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.mul_ext = load_inline(name="corpus_cpp_two_ext_mul", cpp_sources=MUL_CPP, functions=["mul_into"],
                                   extra_cflags=["-O3"], verbose=False)

    def forward(self, a, b, c):
        return self.mul_ext.mul_into(add_ext.add_fwd(a, b), c)
