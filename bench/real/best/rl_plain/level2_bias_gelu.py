# level2/bias_gelu: 2.06x eager (custom_kernel), sample 6 of rl_plain
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 256
#define ROW_GROUPS 128  // blocks along the rows; each walks rows blockIdx.y, blockIdx.y + gridDim.y, ...

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float4 bias_gelu4(float4 v, float4 b) {
    return make_float4(gelu_erf(v.x + b.x), gelu_erf(v.y + b.y), gelu_erf(v.z + b.z), gelu_erf(v.w + b.w));
}
__device__ __forceinline__ float bias_gelu4(float v, float b) { return gelu_erf(v + b); }

// V is float4 (cols counted in float4s) or float; x is (rows, cols) row-major in units of V
template <typename V>
__global__ void bias_gelu_columns(const V* __restrict__ x, const V* __restrict__ bias, V* __restrict__ y,
                                  long rows, long cols) {
    long c = blockIdx.x * (long)THREADS + threadIdx.x;
    if (c >= cols) return;
    V b = bias[c];
    for (long r = blockIdx.y; r < rows; r += gridDim.y) {
        long i = r * cols + c;
        y[i] = bias_gelu4(x[i], b);
    }
}

torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) == bias.numel(), "bias must match the last dim of x");
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    long cols = bc.numel();
    if (xc.numel() == 0 || cols == 0) return y;
    long rows = xc.numel() / cols;
    const float* xp = xc.data_ptr<float>();
    const float* bp = bc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    unsigned gy = (unsigned)(rows < ROW_GROUPS ? rows : ROW_GROUPS);
    bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(xp) % 16 == 0 &&
               reinterpret_cast<std::uintptr_t>(bp) % 16 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
    if (vec) {
        long cols4 = cols / 4;
        dim3 grid((unsigned)((cols4 + THREADS - 1) / THREADS), gy);
        bias_gelu_columns<float4><<<grid, THREADS, 0, stream>>>(reinterpret_cast<const float4*>(xp),
            reinterpret_cast<const float4*>(bp), reinterpret_cast<float4*>(yp), rows, cols4);
    } else {
        dim3 grid((unsigned)((cols + THREADS - 1) / THREADS), gy);
        bias_gelu_columns<float><<<grid, THREADS, 0, stream>>>(xp, bp, yp, rows, cols);
    }
    return y;
}
"""
CPP = "torch::Tensor bias_gelu(torch::Tensor x, torch::Tensor bias);"

ext = load_inline(name="real_bias_gelu_faster_column_owner", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_gelu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return ext.bias_gelu(x, self.bias)