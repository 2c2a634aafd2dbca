"""faster (hoped): CUDA, torch.addmm keeps the bias in the cuBLAS GEMM, then one in-place kernel (float4 body, scalar tail) applies tanh GELU and the scale."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float gelu_tanh_scaled(float v, float s) {
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.f + tanhf(inner)) * s;
}

__global__ void gelu_scale_vec4(float4* __restrict__ y, long n4, float s) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
        v.x = gelu_tanh_scaled(v.x, s); v.y = gelu_tanh_scaled(v.y, s);
        v.z = gelu_tanh_scaled(v.z, s); v.w = gelu_tanh_scaled(v.w, s);
        y[i] = v;
    }
}

__global__ void gelu_scale_tail(float* __restrict__ y, long start, long n, float s) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = gelu_tanh_scaled(y[i], s);
}

// y is modified in place and returned
torch::Tensor gelu_scale_(torch::Tensor y, double scale) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    TORCH_CHECK(y.is_contiguous(), "contiguous tensor expected (it is written in place)");
    long n = y.numel();
    if (n == 0) return y;
    float* p = y.data_ptr<float>();
    float s = (float)scale;
    auto stream = c10::cuda::getCurrentCUDAStream();
    long n4 = reinterpret_cast<std::uintptr_t>(p) % 16 == 0 ? n / 4 : 0;
    if (n4 > 0) {
        long blocks = (n4 + 255) / 256;
        if (blocks > 132L * 32) blocks = 132L * 32;
        gelu_scale_vec4<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<float4*>(p), n4, s);
    }
    long rest = n - 4 * n4;
    if (rest > 0) gelu_scale_tail<<<(unsigned)((rest + 255) / 256), 256, 0, stream>>>(p, 4 * n4, n, s);
    return y;
}
"""
CPP = "torch::Tensor gelu_scale_(torch::Tensor y, double scale);"

ext = load_inline(name="real_gemm_gelu_scale_faster_addmm_inplace_kernel", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["gelu_scale_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())  # fresh and contiguous
        return ext.gelu_scale_(h, float(self.scale))
