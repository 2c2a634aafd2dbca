"""broken: CUDA mm + fused bias/ReLU that writes w.transpose() numpy-style; Tensor::transpose needs the two dims, so nvcc finds no matching overload."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float bias_relu(float v, float b) { v += b; return v > 0.f ? v : 0.f; }

// y (rows, cols) in place: y = relu(y + bias), as float4 (cols4 vectors per row)
__global__ void bias_relu_vec4(float4* __restrict__ y, const float4* __restrict__ bias4, long n4, long cols4) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
        float4 b = bias4[i % cols4];
        v.x = bias_relu(v.x, b.x); v.y = bias_relu(v.y, b.y); v.z = bias_relu(v.z, b.z); v.w = bias_relu(v.w, b.w);
        y[i] = v;
    }
}

__global__ void bias_relu_scalar(float* __restrict__ y, const float* __restrict__ bias, long n, long cols) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = bias_relu(y[i], bias[i % cols]);
}

static unsigned grid_for(long n) {
    long blocks = (n + 255) / 256;
    if (blocks > 132L * 32) blocks = 132L * 32;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.numel() == w.size(0), "shape mismatch");
    auto y = torch::mm(x.contiguous(), w.contiguous().transpose());  // (M, N), a fresh contiguous tensor
    auto bc = b.contiguous();
    long n = y.numel(), cols = bc.numel();
    if (n == 0) return y;
    float* yp = y.data_ptr<float>();
    const float* bp = bc.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(bp) % 16 == 0;
    if (vec)
        bias_relu_vec4<<<grid_for(n / 4), 256, 0, stream>>>(reinterpret_cast<float4*>(yp),
            reinterpret_cast<const float4*>(bp), n / 4, cols / 4);
    else
        bias_relu_scalar<<<grid_for(n), 256, 0, stream>>>(yp, bp, n, cols);
    return y;
}
"""
CPP = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="real_gemm_bias_relu_broken_transpose_no_dims", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["linear_relu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x, self.linear.weight, self.linear.bias)
