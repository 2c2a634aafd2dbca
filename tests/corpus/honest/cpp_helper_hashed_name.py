"""C++ fused linear + bias + ReLU: four rows of x against each weight row at once, eight partial sums per dot.

build pattern: load_inline inside a helper function called from __init__, extra_cflags=['-O3'], the extension
named after a hash of its source (so an edited source never loads a stale build of the same name)

task: cpu/linear_relu
expect: ok
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import hashlib

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Parallel.h>
#include <algorithm>

static inline float dot8(const float* a, const float* w, int64_t n) {
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; ++l) acc[l] += a[k + l] * w[k + l];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; k < n; ++k) s += a[k] * w[k];
    return s;
}

// y[i, j] = max(0, b[j] + sum_k x[i, k] * W[j, k]); x (M, K), W (N, K) as nn.Linear stores it, b (N,)
torch::Tensor linear_relu_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.numel() == w.size(0), "shapes");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32, "float32 only");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto out = torch::empty({M, N}, xc.options());
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, (M + 3) / 4, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int64_t i0 = 4 * t, i1 = std::min(i0 + 4, M);
            for (int64_t j = 0; j < N; ++j) {  // W[j] stays in cache for the four rows
                const float* wj = pw + j * K;
                for (int64_t i = i0; i < i1; ++i)
                    po[i * N + j] = std::max(0.f, pb[j] + dot8(px + i * K, wj, K));
            }
        }
    });
    return out;
}
"""


def build_extension(src, functions):
    """Compile src once per content: the name carries a hash of the source and the function list."""
    digest = hashlib.sha256((src + "|".join(functions)).encode()).hexdigest()[:16]
    return load_inline(name=f"linear_relu_{digest}", cpp_sources=src, functions=functions,
                       extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.ext = build_extension(CPP, ["linear_relu_fwd"])

    def forward(self, x):
        return self.ext.linear_relu_fwd(x, self.linear.weight, self.linear.bias)
