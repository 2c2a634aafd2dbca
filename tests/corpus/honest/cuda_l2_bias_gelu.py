"""CUDA fused bias add + exact GELU: gelu(x + bias) in one float4 pass (eager runs two kernels).

task: level2/bias_gelu
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

__global__ void bias_gelu_kernel(const float4* x, const float4* bias, float4* y, long n4, long cols4) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = x[i], c = bias[i % cols4], r;
        r.x = gelu(v.x + c.x); r.y = gelu(v.y + c.y); r.z = gelu(v.z + c.z); r.w = gelu(v.w + c.w);
        y[i] = r;
    }
}

torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32");
    long cols = bias.numel();
    TORCH_CHECK(cols % 4 == 0 && x.size(-1) == cols, "last dim must equal bias size, a multiple of 4");
    auto xc = x.contiguous(), bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    long n4 = xc.numel() / 4;
    int blocks = (int)std::min<long>((n4 + 255) / 256, 132 * 32);
    bias_gelu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>((const float4*)xc.data_ptr<float>(),
        (const float4*)bc.data_ptr<float>(), (float4*)y.data_ptr<float>(), n4, cols / 4);
    return y;
}
"""
CPP = "torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias);"

ext = load_inline(name="corpus_cuda_bias_gelu", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_gelu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return ext.bias_gelu(x, self.bias)
