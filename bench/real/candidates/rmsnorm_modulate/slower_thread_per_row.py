"""slower: CUDA RMSNorm + modulation with one thread per token row: 131072 threads, each walking its own 4 KiB row twice, so a warp's loads land 4 KiB apart (no coalescing)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// x, y: (rows, D), rows = B * T; scale, shift: (B, D)
__global__ void rms_mod_thread_row(const float* __restrict__ x, const float* __restrict__ scale,
                                   const float* __restrict__ shift, float* __restrict__ y, long rows, long T, long D,
                                   float eps) {
    long row = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * D;
    const float* sc = scale + (row / T) * D;
    const float* sh = shift + (row / T) * D;
    float* yr = y + row * D;
    float ss = 0.f;
    for (long j = 0; j < D; ++j) ss += xr[j] * xr[j];
    float r = rsqrtf(ss / (float)D + eps);
    for (long j = 0; j < D; ++j) yr[j] = (xr[j] * r) * (1.f + sc[j]) + sh[j];
}

torch::Tensor rms_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 3, "CUDA float32 (B, T, D) x expected");
    TORCH_CHECK(scale.is_cuda() && shift.is_cuda() && scale.scalar_type() == torch::kFloat32 &&
                shift.scalar_type() == torch::kFloat32, "CUDA float32 scale and shift expected");
    long B = x.size(0), T = x.size(1), D = x.size(2);
    TORCH_CHECK(scale.dim() == 2 && scale.size(0) == B && scale.size(1) == D && shift.sizes() == scale.sizes(),
                "scale and shift must be (B, D)");
    auto xc = x.contiguous();
    auto sc = scale.contiguous();
    auto sh = shift.contiguous();
    auto y = torch::empty_like(xc);
    long rows = B * T;
    if (rows == 0 || D == 0) return y;
    const int threads = 256;
    rms_mod_thread_row<<<(unsigned)((rows + threads - 1) / threads), threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), sc.data_ptr<float>(), sh.data_ptr<float>(), y.data_ptr<float>(), rows, T, D, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rms_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps);"

ext = load_inline(name="real_rmsnorm_modulate_slower_thread_per_row", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rms_modulate"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        return ext.rms_modulate(x, scale, shift, self.eps)
