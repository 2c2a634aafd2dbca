"""wrong: the float4 launch is capped at 65535 blocks with no grid-stride loop; this shape needs 65536, so the last 1024 outputs are never written."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float relu1(float v) { return v > 0.f ? v : 0.f; }

__global__ void relu_float4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = x[i];
    v.x = relu1(v.x); v.y = relu1(v.y); v.z = relu1(v.z); v.w = relu1(v.w);
    y[i] = v;
}

__global__ void relu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = relu1(x[i]);
}

torch::Tensor relu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    long n = xc.numel();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    long n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        long blocks = std::min<long>((n4 + 255) / 256, 65535L);  // the old 1-D grid limit, kept "to be safe"
        relu_float4_kernel<<<(unsigned)blocks, 256, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    }
    long rest = n - 4 * n4;
    if (rest > 0)
        relu_scalar_kernel<<<(unsigned)((rest + 255) / 256), 256, 0, stream>>>(src, dst, 4 * n4, n);
    return y;
}
"""
CPP = "torch::Tensor relu_fwd(torch::Tensor x);"

ext = load_inline(name="demo_cuda_relu_large_wrong_grid_cap", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["relu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
