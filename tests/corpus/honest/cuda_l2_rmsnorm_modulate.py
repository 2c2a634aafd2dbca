"""CUDA fused RMSNorm + scale/shift: one block per row, the row read once for the sum of squares and once to write.

task: level2/rmsnorm_modulate
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

// x (B, T, D) contiguous, scale/shift (B, D); one 256-thread block per (b, t) row.
__global__ void rmsnorm_modulate_kernel(const float* x, const float* scale, const float* shift, float* y,
                                        int T, int D, float eps) {
    long row = blockIdx.x;
    int b = row / T;
    const float* xr = x + row * (long)D;
    float ss = 0.f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) { float v = xr[j]; ss += v * v; }
    __shared__ float warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
        if (threadIdx.x == 0) warp_sums[0] = v;
    }
    __syncthreads();
    float inv = rsqrtf(warp_sums[0] / D + eps);
    const float* sc = scale + (long)b * D;
    const float* sh = shift + (long)b * D;
    for (int j = threadIdx.x; j < D; j += blockDim.x) y[row * (long)D + j] = xr[j] * inv * (1.f + sc[j]) + sh[j];
}

torch::Tensor rmsnorm_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 3 && x.scalar_type() == torch::kFloat32, "CUDA float32 (B, T, D)");
    auto xc = x.contiguous(), sc = scale.contiguous(), sh = shift.contiguous();
    auto y = torch::empty_like(xc);
    int B = xc.size(0), T = xc.size(1), D = xc.size(2);
    rmsnorm_modulate_kernel<<<(long)B * T, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), sc.data_ptr<float>(), sh.data_ptr<float>(), y.data_ptr<float>(), T, D, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rmsnorm_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps);"

ext = load_inline(name="corpus_cuda_rmsnorm_modulate", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rmsnorm_modulate"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        return ext.rmsnorm_modulate(x, scale, shift, self.eps)
