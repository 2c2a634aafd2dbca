"""broken: the float4 accumulator is initialised with `float4 acc = 0.f;`; there is no conversion from float to float4."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void sum_rows_kernel(const float4* __restrict__ x, float* __restrict__ y, long cols4) {
    const float4* xr = x + blockIdx.x * cols4;
    float4 acc = 0.f;
    for (long j = threadIdx.x; j < cols4; j += blockDim.x) {
        float4 v = xr[j];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    float s = (acc.x + acc.y) + (acc.z + acc.w);
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x % 32 == 0) atomicAdd(&y[blockIdx.x], s);
}

torch::Tensor sum_lastdim(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::zeros({xc.size(0)}, xc.options());
    sum_rows_kernel<<<(unsigned)xc.size(0), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(xc.data_ptr<float>()), y.data_ptr<float>(), xc.size(1) / 4);
    return y;
}
"""
CPP = "torch::Tensor sum_lastdim(torch::Tensor x);"

ext = load_inline(name="demo_cuda_sum_lastdim_broken_float4_from_float", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sum_lastdim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_lastdim(x)
