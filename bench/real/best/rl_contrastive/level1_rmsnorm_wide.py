# level1/rmsnorm_wide: 3.40x eager (custom_kernel), sample 4 of rl_contrastive
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 256

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// VEC: x, w, y 16-byte aligned and cols % 4 == 0, so every row is cols / 4 float4s
template <bool VEC>
__global__ void __launch_bounds__(THREADS) rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                          float* __restrict__ y, long cols, float eps) {
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float ss = 0.f;
    if (VEC) {
        const float4* xr4 = reinterpret_cast<const float4*>(xr);
        for (long j = threadIdx.x; j < cols / 4; j += THREADS) {
            float4 v = xr4[j];
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += THREADS) ss += xr[j] * xr[j];
    }
    // block sum: 8 warp sums through shared memory, the total broadcast to every thread
    __shared__ float partial[THREADS / 32];
    __shared__ float scale;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    ss = warp_sum(ss);
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = warp_sum(lane < THREADS / 32 ? partial[lane] : 0.f);
        if (lane == 0) scale = rsqrtf(ss / (float)cols + eps);
    }
    __syncthreads();
    float r = scale;
    if (VEC) {
        const float4* xr4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* yr4 = reinterpret_cast<float4*>(yr);
        for (long j = threadIdx.x; j < cols / 4; j += THREADS) {
            float4 v = xr4[j], g = w4[j];
            yr4[j] = make_float4(v.x * r * g.x, v.y * r * g.y, v.z * r * g.z, v.w * r * g.w);
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += THREADS) yr[j] = xr[j] * r * w[j];
    }
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == torch::kFloat32, "CUDA float32 weight expected");
    TORCH_CHECK(weight.numel() == x.size(-1), "weight must have the size of the last dim");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto y = torch::empty_like(xc);
    if (y.numel() == 0) return y;
    long cols = xc.size(-1), rows = xc.numel() / cols;
    const float* src = xc.data_ptr<float>();
    const float* w = wc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = cols % 4 == 0 && aligned16(src) && aligned16(w) && aligned16(dst);
    if (vec)
        rmsnorm_kernel<true><<<(unsigned)rows, THREADS, 0, stream>>>(src, w, dst, cols, (float)eps);
    else
        rmsnorm_kernel<false><<<(unsigned)rows, THREADS, 0, stream>>>(src, w, dst, cols, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps);"

ext = load_inline(name="demo_cuda_rmsnorm_wide_faster_row_reread", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rmsnorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return ext.rmsnorm(x, self.weight, self.eps)