"""broken: the kernel calls erf_fast, a device function that is never defined; nvcc reports an undefined identifier."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * x[i] * (1.f + erf_fast(x[i] * 0.70710678118654752f));
}

torch::Tensor gelu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    gelu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
CPP = "torch::Tensor gelu_fwd(torch::Tensor x);"

ext = load_inline(name="demo_cuda_gelu_erf_broken_undefined_function", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["gelu_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.gelu_fwd(x)
