# cudal1 best for task level1/softmax_wide: speedup 1.306x, status ok, found at step 0
"""faster (hoped): CUDA softmax with one 512-thread block per row holding the whole 16384-wide row in registers (8 float4 per thread): one read and one write of each element, block max and sum by warp shuffles."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <cmath>

#define THREADS 512

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// block-wide reductions, the result returned to every thread
__device__ float block_max(float v) {
    __shared__ float part[THREADS / 32];
    __shared__ float result;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_max(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = warp_max(lane < THREADS / 32 ? part[lane] : -INFINITY);
        if (lane == 0) result = w;
    }
    __syncthreads();
    return result;
}
__device__ float block_sum(float v) {
    __shared__ float part[THREADS / 32];
    __shared__ float result;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = warp_sum(lane < THREADS / 32 ? part[lane] : 0.f);
        if (lane == 0) result = w;
    }
    __syncthreads();
    return result;
}

// one block per row, cols4 <= VPT * THREADS float4s, the row kept in registers between the passes
template <int VPT>
__global__ void __launch_bounds__(THREADS) softmax_regs_kernel(const float4* __restrict__ x, float4* __restrict__ y, int cols4) {
    const float4* xr = x + (long)blockIdx.x * cols4;
    float4* yr = y + (long)blockIdx.x * cols4;
    float4 v[VPT];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int j = threadIdx.x + i * THREADS;
        v[i] = j < cols4 ? xr[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    }
    m = block_max(m);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int j = threadIdx.x + i * THREADS;
        if (j < cols4) {
            v[i].x = expf(v[i].x - m); v[i].y = expf(v[i].y - m);
            v[i].z = expf(v[i].z - m); v[i].w = expf(v[i].w - m);
            s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
        }
    }
    s = block_sum(s);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int j = threadIdx.x + i * THREADS;
        if (j < cols4) yr[j] = make_float4(v[i].x / s, v[i].y / s, v[i].z / s, v[i].w / s);
    }
}

// any width or alignment: max, sum and write passes re-reading the row (L2-resident after the first pass)
__global__ void __launch_bounds__(THREADS) softmax_generic_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* xr = x + (long)blockIdx.x * cols;
    float* yr = y + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, xr[j]);
    m = block_max(m);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s += expf(xr[j] - m);
    s = block_sum(s);
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m) / s;
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
    const unsigned grid = (unsigned)rows;
    const int cols4 = (int)(cols / 4);
    const bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(px) % 16 == 0 &&
                     reinterpret_cast<std::uintptr_t>(py) % 16 == 0;
    const float4* x4 = reinterpret_cast<const float4*>(px);
    float4* y4 = reinterpret_cast<float4*>(py);
    if (vec && cols4 <= THREADS)
        softmax_regs_kernel<1><<<grid, THREADS, 0, stream>>>(x4, y4, cols4);
    else if (vec && cols4 <= 2 * THREADS)
        softmax_regs_kernel<2><<<grid, THREADS, 0, stream>>>(x4, y4, cols4);
    else if (vec && cols4 <= 4 * THREADS)
        softmax_regs_kernel<4><<<grid, THREADS, 0, stream>>>(x4, y4, cols4);
    else if (vec && cols4 <= 8 * THREADS)
        softmax_regs_kernel<8><<<grid, THREADS, 0, stream>>>(x4, y4, cols4);
    else
        softmax_generic_kernel<<<grid, THREADS, 0, stream>>>(px, py, (int)cols);
    return y;
}
"""
CPP = "torch::Tensor softmax_lastdim(torch::Tensor x);"

ext = load_inline(name="real_softmax_wide_faster_row_registers", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["softmax_lastdim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_lastdim(x)

