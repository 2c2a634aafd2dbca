"""broken: the host code passes torch::Tensor objects straight to a kernel that takes float pointers; nvcc rejects the call."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void softplus_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 20.f ? x[i] : log1pf(expf(x[i]));
}

torch::Tensor softplus_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    softplus_kernel<<<(unsigned)((n + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(xc, y, n);
    return y;
}
"""
CPP = "torch::Tensor softplus_fwd(torch::Tensor x);"

ext = load_inline(name="demo_cuda_softplus_broken_tensor_to_kernel", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["softplus_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softplus_fwd(x)
