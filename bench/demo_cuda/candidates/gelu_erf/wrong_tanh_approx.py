"""wrong: CUDA GELU with the tanh approximation; up to ~5e-4 off the exact erf form, above the fp32 tolerance."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): what F.gelu(approximate="tanh") computes, not the default
__device__ __forceinline__ float gelu1(float v) {
    return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

__global__ void gelu_float4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = x[i];
    v.x = gelu1(v.x); v.y = gelu1(v.y); v.z = gelu1(v.z); v.w = gelu1(v.w);
    y[i] = v;
}

__global__ void gelu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = gelu1(x[i]);
}

torch::Tensor gelu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    long n = xc.numel();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    long n4 = aligned ? n / 4 : 0;
    if (n4 > 0)
        gelu_float4_kernel<<<(unsigned)((n4 + 255) / 256), 256, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    long rest = n - 4 * n4;
    if (rest > 0)
        gelu_scalar_kernel<<<(unsigned)((rest + 255) / 256), 256, 0, stream>>>(src, dst, 4 * n4, n);
    return y;
}
"""
CPP = "torch::Tensor gelu_fwd(torch::Tensor x);"

ext = load_inline(name="demo_cuda_gelu_erf_wrong_tanh_approx", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.gelu_fwd(x)
