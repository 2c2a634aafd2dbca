# cudal1 best for task level1/cross_entropy: speedup 3.713x, status ok, found at step 0
"""faster (hoped): CUDA cross-entropy in one read of the logits: one 256-thread block per row keeps the row in registers (float4), block max and sum-exp reductions give the row's loss; a second one-block kernel averages the 16384 row losses in double (no log-softmax matrix written)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <cmath>

#define THREADS 256

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block-wide max / sum, the result returned to every thread
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
template <typename T>
__device__ T block_sum(T v) {
    __shared__ T part[THREADS / 32];
    __shared__ T result;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = warp_sum(lane < THREADS / 32 ? part[lane] : T(0));
        if (lane == 0) result = w;
    }
    __syncthreads();
    return result;
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// one block per row; the row (cols4 float4s, cols4 <= VPT * THREADS) stays in registers between the two reductions
template <int VPT>
__global__ void __launch_bounds__(THREADS) ce_rows_regs_kernel(const float* __restrict__ x, const int64_t* __restrict__ t,
                                                               float* __restrict__ row_loss, int cols) {
    const int cols4 = cols / 4;
    const float* xr = x + (long)blockIdx.x * cols;
    const float4* xr4 = reinterpret_cast<const float4*>(xr);
    float4 v[VPT];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int j = threadIdx.x + i * THREADS;
        v[i] = j < cols4 ? xr4[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, max4(v[i]));
    }
    m = block_max(m);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int j = threadIdx.x + i * THREADS;
        if (j < cols4) s += (expf(v[i].x - m) + expf(v[i].y - m)) + (expf(v[i].z - m) + expf(v[i].w - m));
    }
    s = block_sum(s);
    if (threadIdx.x == 0) {
        const int64_t k = t[blockIdx.x];
        const float picked = (k >= 0 && k < cols) ? xr[k] : 0.f;
        row_loss[blockIdx.x] = (logf(s) + m) - picked;
    }
}

// any width / alignment: three passes over the row from global memory (the row is L2-resident on the re-reads)
__global__ void __launch_bounds__(THREADS) ce_rows_generic_kernel(const float* __restrict__ x, const int64_t* __restrict__ t,
                                                                  float* __restrict__ row_loss, int cols) {
    const float* xr = x + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, xr[j]);
    m = block_max(m);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s += expf(xr[j] - m);
    s = block_sum(s);
    if (threadIdx.x == 0) {
        const int64_t k = t[blockIdx.x];
        const float picked = (k >= 0 && k < cols) ? xr[k] : 0.f;
        row_loss[blockIdx.x] = (logf(s) + m) - picked;
    }
}

__global__ void __launch_bounds__(THREADS) mean_kernel(const float* __restrict__ v, long n, float* __restrict__ out) {
    double acc = 0.0;
    for (long i = threadIdx.x; i < n; i += THREADS) acc += v[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) *out = (float)(acc / (double)n);
}

torch::Tensor ce_loss(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && targets.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(logits.scalar_type() == torch::kFloat32 && logits.dim() == 2, "float32 (N, C) logits expected");
    TORCH_CHECK(targets.scalar_type() == torch::kInt64 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                "int64 (N,) targets expected");
    auto x = logits.contiguous();
    auto t = targets.contiguous();
    const long rows = x.size(0);
    const int cols = x.size(1);
    auto out = torch::empty({}, x.options());
    if (rows == 0 || cols == 0) return out.fill_(NAN);
    TORCH_CHECK(rows <= 2147483647L, "too many rows for a 1-D grid");
    auto row_loss = torch::empty({rows}, x.options());
    const float* px = x.data_ptr<float>();
    const int64_t* pt = t.data_ptr<int64_t>();
    float* pl = row_loss.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const unsigned grid = (unsigned)rows;
    const int cols4 = cols / 4;
    const bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(px) % 16 == 0;
    if (vec && cols4 <= THREADS)
        ce_rows_regs_kernel<1><<<grid, THREADS, 0, stream>>>(px, pt, pl, cols);
    else if (vec && cols4 <= 2 * THREADS)
        ce_rows_regs_kernel<2><<<grid, THREADS, 0, stream>>>(px, pt, pl, cols);
    else if (vec && cols4 <= 4 * THREADS)
        ce_rows_regs_kernel<4><<<grid, THREADS, 0, stream>>>(px, pt, pl, cols);
    else if (vec && cols4 <= 8 * THREADS)
        ce_rows_regs_kernel<8><<<grid, THREADS, 0, stream>>>(px, pt, pl, cols);
    else
        ce_rows_generic_kernel<<<grid, THREADS, 0, stream>>>(px, pt, pl, cols);
    mean_kernel<<<1, THREADS, 0, stream>>>(pl, rows, out.data_ptr<float>());
    return out;
}
"""
CPP = "torch::Tensor ce_loss(torch::Tensor logits, torch::Tensor targets);"

ext = load_inline(name="real_cross_entropy_faster_row_registers", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["ce_loss"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return ext.ce_loss(logits, targets)

