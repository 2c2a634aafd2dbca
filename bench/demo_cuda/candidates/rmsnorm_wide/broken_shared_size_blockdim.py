"""broken: the shared array for the warp sums is sized `blockDim.x / 32`, not a compile-time constant; nvcc: "a variable length array cannot have static storage duration"."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void rmsnorm_kernel(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
                               long cols4, float eps) {
    const float4* xr = x + blockIdx.x * cols4;
    float4* yr = y + blockIdx.x * cols4;
    float ss = 0.f;
    for (long j = threadIdx.x; j < cols4; j += blockDim.x) {
        float4 v = xr[j];
        ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
    }
    __shared__ float partial[blockDim.x / 32];
    __shared__ float scale;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int offset = 16; offset > 0; offset /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, offset);
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
        for (int k = 0; k < blockDim.x / 32; ++k) total += partial[k];
        scale = rsqrtf(total / (float)(4 * cols4) + eps);
    }
    __syncthreads();
    float r = scale;
    for (long j = threadIdx.x; j < cols4; j += blockDim.x) {
        float4 v = xr[j], g = w[j];
        yr[j] = make_float4(v.x * r * g.x, v.y * r * g.y, v.z * r * g.z, v.w * r * g.w);
    }
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.size(-1) % 4 == 0, "CUDA float32, cols % 4 == 0");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto y = torch::empty_like(xc);
    long cols = xc.size(-1), rows = xc.numel() / cols;
    rmsnorm_kernel<<<(unsigned)rows, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(xc.data_ptr<float>()), reinterpret_cast<const float4*>(wc.data_ptr<float>()),
        reinterpret_cast<float4*>(y.data_ptr<float>()), cols / 4, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps);"

ext = load_inline(name="demo_cuda_rmsnorm_wide_broken_shared_size_blockdim", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rmsnorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return ext.rmsnorm(x, self.weight, self.eps)
