# cudal1 best for task level2/gemm_gelu_scale: speedup 1.023x, status ok, found at step 0
"""faster (hoped): CUDA, cuBLAS GEMM without bias (torch::mm), then one in-place float4 grid-stride kernel for bias + tanh GELU + scale: one pass over the output instead of two."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// the same expression as PyTorch's approximate="tanh": 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), accurate tanhf
__device__ __forceinline__ float epi(float v, float b, float s) {
    v += b;
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.f + tanhf(inner)) * s;
}

__global__ void bias_gelu_scale_vec4(float4* __restrict__ y, const float4* __restrict__ bias4, long n4, long cols4, float s) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
        float4 b = bias4[i % cols4];
        v.x = epi(v.x, b.x, s); v.y = epi(v.y, b.y, s); v.z = epi(v.z, b.z, s); v.w = epi(v.w, b.w, s);
        y[i] = v;
    }
}

__global__ void bias_gelu_scale_scalar(float* __restrict__ y, const float* __restrict__ bias, long n, long cols, float s) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = epi(y[i], bias[i % cols], s);
}

static unsigned grid_for(long n) {
    long blocks = (n + 255) / 256;
    if (blocks > 132L * 32) blocks = 132L * 32;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

torch::Tensor linear_gelu_scale(torch::Tensor x, torch::Tensor w, torch::Tensor b, double scale) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.numel() == w.size(0), "shape mismatch");
    auto y = torch::mm(x.contiguous(), w.contiguous().t());
    auto bc = b.contiguous();
    long n = y.numel(), cols = bc.numel();
    if (n == 0) return y;
    float* yp = y.data_ptr<float>();
    const float* bp = bc.data_ptr<float>();
    float s = (float)scale;
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(bp) % 16 == 0;
    if (vec)
        bias_gelu_scale_vec4<<<grid_for(n / 4), 256, 0, stream>>>(reinterpret_cast<float4*>(yp),
            reinterpret_cast<const float4*>(bp), n / 4, cols / 4, s);
    else
        bias_gelu_scale_scalar<<<grid_for(n), 256, 0, stream>>>(yp, bp, n, cols, s);
    return y;
}
"""
CPP = "torch::Tensor linear_gelu_scale(torch::Tensor x, torch::Tensor w, torch::Tensor b, double scale);"

ext = load_inline(name="real_gemm_gelu_scale_faster_mm_fused_epilogue", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["linear_gelu_scale"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return ext.linear_gelu_scale(x, self.linear.weight, self.linear.bias, float(self.scale))

