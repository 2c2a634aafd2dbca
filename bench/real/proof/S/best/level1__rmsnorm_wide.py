# cudal1 best for task level1/rmsnorm_wide: speedup 4.515x, status ok, found at step 0
"""faster (hoped): CUDA RMSNorm, one 256-thread block per row held in registers (8 float4 per thread), one read and one write per element."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 256
#define ITEMS 8  // float4s kept per thread: rows of up to THREADS * ITEMS * 4 = 8192 floats stay in registers

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// the block's sum, handed to every thread (called once per kernel)
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[THREADS / 32];
    __shared__ float total;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < THREADS / 32 ? partial[lane] : 0.f);
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

// x, w, y 16-byte aligned and cols4 <= THREADS * ITEMS: the row is read once into registers
__global__ void __launch_bounds__(THREADS) rmsnorm_regs_kernel(const float4* __restrict__ x, const float4* __restrict__ w,
                                                               float4* __restrict__ y, long cols4, float eps) {
    const float4* xr = x + blockIdx.x * cols4;
    float4* yr = y + blockIdx.x * cols4;
    float4 v[ITEMS];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        v[k] = j < cols4 ? xr[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        ss += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
    float r = rsqrtf(block_sum(ss) / (float)(4 * cols4) + eps);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        if (j < cols4) {
            float4 g = w[j];
            yr[j] = make_float4(v[k].x * r * g.x, v[k].y * r * g.y, v[k].z * r * g.z, v[k].w * r * g.w);
        }
    }
}

// any other row: sum of squares in a first pass, the row read again (from L2) in the second
template <bool VEC>
__global__ void __launch_bounds__(THREADS) rmsnorm_reread_kernel(const float* __restrict__ x, const float* __restrict__ w,
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
    float r = rsqrtf(block_sum(ss) / (float)cols + eps);
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
    if (vec && cols / 4 <= THREADS * ITEMS)
        rmsnorm_regs_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<const float4*>(w), reinterpret_cast<float4*>(dst),
            cols / 4, (float)eps);
    else if (vec)
        rmsnorm_reread_kernel<true><<<(unsigned)rows, THREADS, 0, stream>>>(src, w, dst, cols, (float)eps);
    else
        rmsnorm_reread_kernel<false><<<(unsigned)rows, THREADS, 0, stream>>>(src, w, dst, cols, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps);"

ext = load_inline(name="demo_cuda_rmsnorm_wide_faster_row_registers", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rmsnorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return ext.rmsnorm(x, self.weight, self.eps)

