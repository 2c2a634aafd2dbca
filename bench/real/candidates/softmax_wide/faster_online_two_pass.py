"""faster (hoped): CUDA softmax, one 256-thread block per row: an online pass keeps a running (max, rescaled sum) per thread over float4 loads, the block merges the pairs, then a second pass re-reads the row (from L2) and writes exp(x - max) / sum."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <cmath>

#define THREADS 256
#define WARPS (THREADS / 32)

// (m, s) := merge of (m, s) and (m2, s2), where s is a sum of exp(x - m)
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mm = fmaxf(m, m2);
    if (mm == -INFINITY) return;  // both partial states are still empty
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

__device__ __forceinline__ void online4(float& m, float& s, float4 v) {
    const float mm = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    s = s * expf(m - mm) + ((expf(v.x - mm) + expf(v.y - mm)) + (expf(v.z - mm) + expf(v.w - mm)));
    m = mm;
}

// the row's (max, sum of exp(x - max)), returned to every thread
__device__ void block_stats(float& m, float& s) {
    __shared__ float pm[WARPS], ps[WARPS];
    __shared__ float rm, rs;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int o = 16; o > 0; o /= 2) merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) { pm[warp] = m; ps[warp] = s; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float bm = pm[0], bs = ps[0];
        for (int w = 1; w < WARPS; ++w) merge(bm, bs, pm[w], ps[w]);
        rm = bm; rs = bs;
    }
    __syncthreads();
    m = rm; s = rs;
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS) softmax_online_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* xr = x + (long)blockIdx.x * cols;
    float* yr = y + (long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.f;
    const int cols4 = VEC ? cols / 4 : 0;
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
#pragma unroll 4
    for (int j = threadIdx.x; j < cols4; j += THREADS) online4(m, s, xr4[j]);
    for (int j = 4 * cols4 + threadIdx.x; j < cols; j += THREADS) {
        const float v = xr[j];
        const float mm = fmaxf(m, v);
        s = s * expf(m - mm) + expf(v - mm);
        m = mm;
    }
    block_stats(m, s);
    float4* yr4 = reinterpret_cast<float4*>(yr);
#pragma unroll 4
    for (int j = threadIdx.x; j < cols4; j += THREADS) {
        const float4 v = xr4[j];
        yr4[j] = make_float4(expf(v.x - m) / s, expf(v.y - m) / s, expf(v.z - m) / s, expf(v.w - m) / s);
    }
    for (int j = 4 * cols4 + threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m) / s;
}

torch::Tensor softmax_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const long cols = xc.size(-1);
    if (xc.numel() == 0) return y;
    const long rows = xc.numel() / cols;
    TORCH_CHECK(rows <= 2147483647L && cols <= 2147483647L, "shape too large");
    const float* px = xc.data_ptr<float>();
    float* py = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(px) % 16 == 0 &&
                     reinterpret_cast<std::uintptr_t>(py) % 16 == 0;
    if (vec)
        softmax_online_kernel<true><<<(unsigned)rows, THREADS, 0, stream>>>(px, py, (int)cols);
    else
        softmax_online_kernel<false><<<(unsigned)rows, THREADS, 0, stream>>>(px, py, (int)cols);
    return y;
}
"""
CPP = "torch::Tensor softmax_lastdim(torch::Tensor x);"

ext = load_inline(name="real_softmax_wide_faster_online_two_pass", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["softmax_lastdim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_lastdim(x)
