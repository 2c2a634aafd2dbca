# cudal1 best for task level2/bias_gelu: speedup 2.337x, status ok, found at step 0
"""faster (hoped): CUDA bias add and exact erf GELU fused in one grid-stride float4 kernel (one read, one write); scalar kernel when rows are not float4-aligned."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

// x viewed as float4: n4 vectors, each row holds cols4 of them; bias4 has cols4 vectors
__global__ void bias_gelu_vec4(const float4* __restrict__ x, const float4* __restrict__ bias4, float4* __restrict__ y,
                               long n4, long cols4) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        float4 b = bias4[i % cols4];
        v.x = gelu_erf(v.x + b.x); v.y = gelu_erf(v.y + b.y); v.z = gelu_erf(v.z + b.z); v.w = gelu_erf(v.w + b.w);
        y[i] = v;
    }
}

__global__ void bias_gelu_scalar(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                 long n, long cols) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = gelu_erf(x[i] + bias[i % cols]);
}

static unsigned grid_for(long n, int threads) {
    long blocks = (n + threads - 1) / threads;
    if (blocks > 132L * 32) blocks = 132L * 32;  // grid-stride beyond this
    return (unsigned)(blocks > 0 ? blocks : 1);
}

torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(), "bias must match the last dim of x");
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    if (n == 0) return y;
    long cols = bc.numel();
    const float* xp = xc.data_ptr<float>();
    const float* bp = bc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(xp) % 16 == 0 &&
               reinterpret_cast<std::uintptr_t>(bp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
    if (vec) {
        long n4 = n / 4;  // cols % 4 == 0, so n % 4 == 0 and there is no tail
        bias_gelu_vec4<<<grid_for(n4, 256), 256, 0, stream>>>(reinterpret_cast<const float4*>(xp),
            reinterpret_cast<const float4*>(bp), reinterpret_cast<float4*>(yp), n4, cols / 4);
    } else {
        bias_gelu_scalar<<<grid_for(n, 256), 256, 0, stream>>>(xp, bp, yp, n, cols);
    }
    return y;
}
"""
CPP = "torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias);"

ext = load_inline(name="real_bias_gelu_faster_float4_fused", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_gelu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return ext.bias_gelu(x, self.bias)

