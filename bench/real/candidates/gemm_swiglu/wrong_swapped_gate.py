"""wrong: CUDA two cuBLAS GEMMs + fused float4 silu-multiply, but the GEMM outputs are swapped: silu is applied to x @ W3^T and multiplied by x @ W1^T."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// v / (1 + exp(-v)) with the accurate expf, as PyTorch's silu; -v large gives exp = inf and -0, as it does there
__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + expf(-a)) * b; }

__global__ void silu_mul_vec4(float4* __restrict__ a, const float4* __restrict__ b, long n4) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 u = a[i], v = b[i];
        u.x = silu_mul(u.x, v.x); u.y = silu_mul(u.y, v.y); u.z = silu_mul(u.z, v.z); u.w = silu_mul(u.w, v.w);
        a[i] = u;
    }
}

__global__ void silu_mul_tail(float* __restrict__ a, const float* __restrict__ b, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) a[i] = silu_mul(a[i], b[i]);
}

torch::Tensor swiglu(torch::Tensor x, torch::Tensor w1, torch::Tensor w3) {
    TORCH_CHECK(x.is_cuda() && w1.is_cuda() && w3.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w1.scalar_type() == torch::kFloat32 &&
                w3.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w1.dim() == 2 && w1.sizes() == w3.sizes() && x.size(1) == w1.size(1), "shape mismatch");
    auto xc = x.contiguous();
    auto a = torch::mm(xc, w3.contiguous().t());  // fresh, contiguous: becomes the output
    auto b = torch::mm(xc, w1.contiguous().t());
    long n = a.numel();
    if (n == 0) return a;
    float* ap = a.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool aligned = reinterpret_cast<std::uintptr_t>(ap) % 16 == 0 && reinterpret_cast<std::uintptr_t>(bp) % 16 == 0;
    long n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        long blocks = (n4 + 255) / 256;
        if (blocks > 132L * 32) blocks = 132L * 32;
        silu_mul_vec4<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<float4*>(ap),
            reinterpret_cast<const float4*>(bp), n4);
    }
    long rest = n - 4 * n4;
    if (rest > 0) silu_mul_tail<<<(unsigned)((rest + 255) / 256), 256, 0, stream>>>(ap, bp, 4 * n4, n);
    return a;
}
"""
CPP = "torch::Tensor swiglu(torch::Tensor x, torch::Tensor w1, torch::Tensor w3);"

ext = load_inline(name="real_gemm_swiglu_wrong_swapped_gate", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["swiglu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return ext.swiglu(x, self.w1.weight, self.w3.weight)
