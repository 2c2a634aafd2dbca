"""slower: CUDA RMSNorm with one thread per row: 8192 threads on 32 blocks, a warp's 32 loads land 32 KiB apart (no coalescing)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void rmsnorm_row_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   long rows, long cols, float eps) {
    long row = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float ss = 0.f;
    for (long j = 0; j < cols; ++j) ss += xr[j] * xr[j];
    float r = rsqrtf(ss / (float)cols + eps);
    for (long j = 0; j < cols; ++j) yr[j] = xr[j] * r * w[j];
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == torch::kFloat32, "CUDA float32 weight expected");
    TORCH_CHECK(weight.numel() == x.size(-1), "weight must have the size of the last dim");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto y = torch::empty_like(xc);
    if (y.numel() == 0) return y;
    long cols = xc.size(-1), rows = xc.numel() / cols;
    rmsnorm_row_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), rows, cols, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps);"

ext = load_inline(name="demo_cuda_rmsnorm_wide_slower_thread_per_row", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rmsnorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return ext.rmsnorm(x, self.weight, self.eps)
