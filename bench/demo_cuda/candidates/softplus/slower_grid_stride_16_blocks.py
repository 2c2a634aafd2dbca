"""slower: CUDA softplus with a grid-stride loop over only 16 blocks of 256 threads: 16 of the H200's 132 SMs do all the work."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void softplus_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v > 20.f ? v : log1pf(expf(v));
    }
}

torch::Tensor softplus_fwd(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    if (n > 0)
        softplus_kernel<<<16, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
CPP = "torch::Tensor softplus_fwd(torch::Tensor x);"

ext = load_inline(name="demo_cuda_softplus_slower_grid_stride_16_blocks", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["softplus_fwd"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softplus_fwd(x)
