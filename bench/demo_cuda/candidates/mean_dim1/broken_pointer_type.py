"""broken: `const float4* src = xc.data_ptr<float>();` needs a reinterpret_cast; nvcc rejects the pointer conversion."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void mean_mid_kernel(const float4* __restrict__ x, float4* __restrict__ y, long R, long inner4) {
    long o = blockIdx.x, c = threadIdx.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long r = 0; r < R; ++r) {
        float4 v = x[(o * R + r) * inner4 + c];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    y[o * inner4 + c] = make_float4(acc.x / R, acc.y / R, acc.z / R, acc.w / R);
}

torch::Tensor mean_dim(torch::Tensor x, int64_t dim) {
    auto xc = x.contiguous();
    auto y = torch::empty({xc.size(0), xc.size(2)}, xc.options());
    const float4* src = xc.data_ptr<float>();
    float4* dst = reinterpret_cast<float4*>(y.data_ptr<float>());
    mean_mid_kernel<<<(unsigned)xc.size(0), (unsigned)(xc.size(2) / 4), 0, c10::cuda::getCurrentCUDAStream()>>>(
        src, dst, xc.size(1), xc.size(2) / 4);
    return y;
}
"""
CPP = "torch::Tensor mean_dim(torch::Tensor x, int64_t dim);"

ext = load_inline(name="demo_cuda_mean_dim1_broken_pointer_type", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mean_dim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_dim(x, self.dim)
