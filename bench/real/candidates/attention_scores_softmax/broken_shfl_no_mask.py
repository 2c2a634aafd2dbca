"""broken: CUDA bmm + block-per-row register softmax whose warp reductions call __shfl_xor_sync(v, off) without the lane mask; nvcc finds no matching overload."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <cmath>

#define THREADS 256

template <bool IS_MAX>
__device__ __forceinline__ float block_reduce(float v, float* shm) {
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(v, off);
        v = IS_MAX ? fmaxf(v, o) : v + o;
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  // shm may still be read by a previous reduction
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    v = lane < THREADS / 32 ? shm[lane] : (IS_MAX ? -INFINITY : 0.f);
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = IS_MAX ? fmaxf(v, o) : v + o;
    }
    return v;  // every thread holds the block's result
}

// one block per row of x (rows, T), T % 4 == 0, T / 4 <= THREADS * NV: the row lives in registers
template <int NV>
__global__ void __launch_bounds__(THREADS) softmax_row_regs(float4* __restrict__ x, long T4, float div) {
    __shared__ float shm[THREADS / 32];
    float4* p = x + blockIdx.x * T4;
    float4 v[NV];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        long c = threadIdx.x + (long)j * THREADS;
        if (c < T4) {
            float4 t = p[c];
            t.x /= div; t.y /= div; t.z /= div; t.w /= div;
            v[j] = t;
            m = fmaxf(m, fmaxf(fmaxf(t.x, t.y), fmaxf(t.z, t.w)));
        }
    }
    m = block_reduce<true>(m, shm);
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        long c = threadIdx.x + (long)j * THREADS;
        if (c < T4) {
            v[j].x = expf(v[j].x - m); v[j].y = expf(v[j].y - m); v[j].z = expf(v[j].z - m); v[j].w = expf(v[j].w - m);
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    s = block_reduce<false>(s, shm);
    float inv = 1.f / s;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        long c = threadIdx.x + (long)j * THREADS;
        if (c < T4) p[c] = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
    }
}

// any T, any alignment: three passes over the row from global memory
__global__ void __launch_bounds__(THREADS) softmax_row_loop(float* __restrict__ x, long T, float div) {
    __shared__ float shm[THREADS / 32];
    float* p = x + blockIdx.x * T;
    float m = -INFINITY;
    for (long c = threadIdx.x; c < T; c += THREADS) m = fmaxf(m, p[c] / div);
    m = block_reduce<true>(m, shm);
    float s = 0.f;
    for (long c = threadIdx.x; c < T; c += THREADS) s += expf(p[c] / div - m);
    s = block_reduce<false>(s, shm);
    float inv = 1.f / s;
    for (long c = threadIdx.x; c < T; c += THREADS) p[c] = expf(p[c] / div - m) * inv;
}

torch::Tensor attn_probs(torch::Tensor q, torch::Tensor k) {
    TORCH_CHECK(q.is_cuda() && k.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && q.size(0) == k.size(0) && q.size(2) == k.size(2), "shape mismatch");
    auto s = torch::matmul(q.contiguous(), k.contiguous().transpose(1, 2)).contiguous();  // (BH, Tq, Tk)
    if (s.numel() == 0) return s;
    long T = s.size(2);
    long rows = s.numel() / T;
    TORCH_CHECK(rows <= 0x7fffffffL, "too many rows for a one-dimensional grid");
    float div = (float)std::sqrt((double)q.size(2));
    float* p = s.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    long T4 = T / 4;
    bool vec = T % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    float4* p4 = reinterpret_cast<float4*>(p);
    if (vec && T4 <= THREADS)
        softmax_row_regs<1><<<(unsigned)rows, THREADS, 0, stream>>>(p4, T4, div);
    else if (vec && T4 <= 2 * THREADS)
        softmax_row_regs<2><<<(unsigned)rows, THREADS, 0, stream>>>(p4, T4, div);
    else if (vec && T4 <= 4 * THREADS)
        softmax_row_regs<4><<<(unsigned)rows, THREADS, 0, stream>>>(p4, T4, div);
    else
        softmax_row_loop<<<(unsigned)rows, THREADS, 0, stream>>>(p, T, div);
    return s;
}
"""
CPP = "torch::Tensor attn_probs(torch::Tensor q, torch::Tensor k);"

ext = load_inline(name="real_attention_scores_softmax_broken_shfl_no_mask", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["attn_probs"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return ext.attn_probs(q, k)
