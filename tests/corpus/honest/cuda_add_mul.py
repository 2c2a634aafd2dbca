"""CUDA fused (a + b) * c through load_inline: one read of each input, one write, on the current stream.

task: cpu/add_mul
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void add_mul_kernel(const float* a, const float* b, const float* c, float* y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = (a[i] + b[i]) * c[i];
}

torch::Tensor add_mul_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    TORCH_CHECK(a.is_cuda() && a.sizes() == b.sizes() && b.sizes() == c.sizes(), "same-shape CUDA tensors expected");
    auto ac = a.contiguous(), bc = b.contiguous(), cc = c.contiguous();
    auto out = torch::empty_like(ac);
    long n = ac.numel();
    int blocks = (int)std::min<long>((n + 255) / 256, 65535);
    add_mul_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        ac.data_ptr<float>(), bc.data_ptr<float>(), cc.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP = "torch::Tensor add_mul_fwd(torch::Tensor a, torch::Tensor b, torch::Tensor c);"

ext = load_inline(name="corpus_cuda_add_mul", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["add_mul_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return ext.add_mul_fwd(a, b, c)
