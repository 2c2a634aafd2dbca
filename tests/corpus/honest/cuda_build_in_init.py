"""CUDA exact GELU built in __init__: a grid-stride float4 kernel, y = x * Phi(x) through erff, on the current stream.

build pattern: load_inline inside ModelNew.__init__, kept on the instance (self.ext), the one code models write most

task: level1/gelu_erf
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

__global__ void gelu_kernel(const float4* x, float4* y, long n4) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = gelu(v.x); v.y = gelu(v.y); v.z = gelu(v.z); v.w = gelu(v.w);
        y[i] = v;
    }
}

__global__ void gelu_tail(const float* x, float* y, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = gelu(x[i]);
}

torch::Tensor gelu_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    long n = xc.numel(), n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0) {
        int blocks = (int)std::min<long>((n4 + 255) / 256, 65535);
        gelu_kernel<<<blocks, 256, 0, stream>>>(
            (const float4*)xc.data_ptr<float>(), (float4*)out.data_ptr<float>(), n4);
    }
    if (n > 4 * n4) gelu_tail<<<1, 256, 0, stream>>>(xc.data_ptr<float>(), out.data_ptr<float>(), 4 * n4, n);
    return out;
}
"""
CPP = "torch::Tensor gelu_fwd(torch::Tensor x);"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(name="corpus_cuda_gelu_init", cpp_sources=CPP, cuda_sources=CUDA,
                               functions=["gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)

    def forward(self, x):
        return self.ext.gelu_fwd(x)
