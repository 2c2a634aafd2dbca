"""CUDA fused gated activation: clamp(silu(a) * b, -6, 6) in one float4 pass (eager runs three kernels).

task: level2/silu_mul_clamp
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float gate(float a, float b) {
    float s = a / (1.f + __expf(-a));
    return fminf(fmaxf(s * b, -6.f), 6.f);
}

__global__ void silu_mul_clamp_kernel(const float4* a, const float4* b, float4* y, long n4) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 u = a[i], v = b[i], r;
        r.x = gate(u.x, v.x); r.y = gate(u.y, v.y); r.z = gate(u.z, v.z); r.w = gate(u.w, v.w);
        y[i] = r;
    }
}

__global__ void silu_mul_clamp_tail(const float* a, const float* b, float* y, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = gate(a[i], b[i]);
}

torch::Tensor silu_mul_clamp(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat32 && a.sizes() == b.sizes(), "same-shape CUDA float32");
    auto ac = a.contiguous(), bc = b.contiguous();
    auto y = torch::empty_like(ac);
    long n = ac.numel(), n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0) {
        int blocks = (int)std::min<long>((n4 + 255) / 256, 132 * 32);
        silu_mul_clamp_kernel<<<blocks, 256, 0, stream>>>((const float4*)ac.data_ptr<float>(),
            (const float4*)bc.data_ptr<float>(), (float4*)y.data_ptr<float>(), n4);
    }
    if (n > 4 * n4) silu_mul_clamp_tail<<<1, 256, 0, stream>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
                                                               y.data_ptr<float>(), 4 * n4, n);
    return y;
}
"""
CPP = "torch::Tensor silu_mul_clamp(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="corpus_cuda_silu_mul_clamp", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["silu_mul_clamp"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.silu_mul_clamp(a, b)
