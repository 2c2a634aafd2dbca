"""CUDA ELU with vectorised float4 loads and stores: 16 bytes per thread per access, a quarter of the instructions.

Full precision: expm1f, not __expf, for the negative side (PyTorch computes expm1 too). The float4 kernel needs
16-byte-aligned buffers; a tensor whose data starts off that alignment (a view with an offset) takes the scalar
kernel for all of its elements, and a tail of fewer than 4 elements is done by the scalar kernel. Built with
load_inline and launched on the current stream.

task: level1/elu
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

__device__ __forceinline__ float elu1(float v) { return v > 0.f ? v : expm1f(v); }  // alpha = 1

__global__ void elu_float4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = elu1(v.x); v.y = elu1(v.y); v.z = elu1(v.z); v.w = elu1(v.w);
        y[i] = v;
    }
}

__global__ void elu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, long start, long n) {
    for (long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = elu1(x[i]);
}

torch::Tensor elu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    long n = xc.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    long n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        long blocks = std::min<long>((n4 + 255) / 256, 65535L * 8);
        elu_float4_kernel<<<(unsigned)blocks, 256, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    }
    if (n > 4 * n4) {
        long rest = n - 4 * n4;
        long blocks = std::min<long>((rest + 255) / 256, 65535L * 8);
        elu_scalar_kernel<<<(unsigned)blocks, 256, 0, stream>>>(src, dst, 4 * n4, n);
    }
    return y;
}
"""
CPP = "torch::Tensor elu_fwd(torch::Tensor x);"

ext = load_inline(name="corpus_cuda_elu_float4", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["elu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.elu_fwd(x)
