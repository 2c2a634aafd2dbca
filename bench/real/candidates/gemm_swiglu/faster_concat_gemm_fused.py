"""faster (hoped): CUDA, one cuBLAS GEMM against [W1; W3] concatenated (N = 2H), then one float4 kernel reads both halves of each row and writes silu(gate) * up; the per-call weight concat (64 MiB) may cancel the gain."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.f + expf(-a)) * b; }
__device__ __forceinline__ float4 silu_mul(float4 a, float4 b) {
    return make_float4(silu_mul(a.x, b.x), silu_mul(a.y, b.y), silu_mul(a.z, b.z), silu_mul(a.w, b.w));
}

// h (rows, 2 * hid) = [gate | up], y (rows, hid); V is float4 (hid counted in float4s) or float
template <typename V>
__global__ void swiglu_halves(const V* __restrict__ h, V* __restrict__ y, long rows, long hid) {
    long n = rows * hid;
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) {
        long r = i / hid, c = i - r * hid;
        const V* row = h + r * 2 * hid;
        y[i] = silu_mul(row[c], row[hid + c]);
    }
}

torch::Tensor swiglu(torch::Tensor x, torch::Tensor w1, torch::Tensor w3) {
    TORCH_CHECK(x.is_cuda() && w1.is_cuda() && w3.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w1.scalar_type() == torch::kFloat32 &&
                w3.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w1.dim() == 2 && w1.sizes() == w3.sizes() && x.size(1) == w1.size(1), "shape mismatch");
    long rows = x.size(0), hid = w1.size(0);
    auto w = torch::cat({w1, w3}, 0);                 // (2H, D), contiguous
    auto h = torch::mm(x.contiguous(), w.t());       // (M, 2H)
    auto y = torch::empty({rows, hid}, h.options());
    if (rows == 0 || hid == 0) return y;
    const float* hp = h.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = hid % 4 == 0 && reinterpret_cast<std::uintptr_t>(hp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
    long n = vec ? rows * (hid / 4) : rows * hid;
    long blocks = (n + 255) / 256;
    if (blocks > 132L * 32) blocks = 132L * 32;
    if (vec)
        swiglu_halves<float4><<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(hp),
            reinterpret_cast<float4*>(yp), rows, hid / 4);
    else
        swiglu_halves<float><<<(unsigned)blocks, 256, 0, stream>>>(hp, yp, rows, hid);
    return y;
}
"""
CPP = "torch::Tensor swiglu(torch::Tensor x, torch::Tensor w1, torch::Tensor w3);"

ext = load_inline(name="real_gemm_swiglu_faster_concat_gemm_fused", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["swiglu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return ext.swiglu(x, self.w1.weight, self.w3.weight)
