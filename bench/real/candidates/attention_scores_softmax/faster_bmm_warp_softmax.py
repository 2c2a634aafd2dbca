"""faster (hoped): CUDA, cuBLAS bmm for the scores, then one in-place kernel, a warp per row: an online max/sum pass and a write pass (float4, the row stays in L1/L2), the 1/sqrt(d) scale folded in."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <cmath>

#define WARPS 8  // rows per block

// merge the running (max, sum) pair (m, s) with (m2, s2); an empty side has m = -inf and s = 0
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;  // both empty
    s = (m == -INFINITY ? 0.f : s * expf(m - mn)) + (m2 == -INFINITY ? 0.f : s2 * expf(m2 - mn));
    m = mn;
}

__device__ __forceinline__ void push(float& m, float& s, float v) {
    if (v > m) { s = (m == -INFINITY ? 0.f : s * expf(m - v)) + 1.f; m = v; }
    else s += expf(v - m);
}

// scores (rows, T) in place: softmax(scores / div) along T; one warp per row; V = float4 (T4 = T / 4) or float
template <typename V, int W>
__global__ void softmax_rows_warp(float* __restrict__ x, long rows, long T, float div) {
    int lane = threadIdx.x & 31;
    long row = blockIdx.x * (long)WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warps leave together: the shuffles below stay full-warp
    float* p = x + row * T;
    long n = T / W;
    const V* pv = reinterpret_cast<const V*>(p);
    float m = -INFINITY, s = 0.f;
    for (long c = lane; c < n; c += 32) {
        V v = pv[c];
        const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
        for (int j = 0; j < W; ++j) push(m, s, f[j] / div);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        merge(m, s, m2, s2);
    }
    float inv = 1.f / s;
    V* qv = reinterpret_cast<V*>(p);
    for (long c = lane; c < n; c += 32) {
        V v = qv[c];
        float* f = reinterpret_cast<float*>(&v);
#pragma unroll
        for (int j = 0; j < W; ++j) f[j] = expf(f[j] / div - m) * inv;
        qv[c] = v;
    }
}

torch::Tensor attn_probs(torch::Tensor q, torch::Tensor k) {
    TORCH_CHECK(q.is_cuda() && k.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && q.size(0) == k.size(0) && q.size(2) == k.size(2), "shape mismatch");
    auto s = torch::bmm(q.contiguous(), k.contiguous().transpose(1, 2)).contiguous();  // (BH, Tq, Tk), fresh
    long T = s.size(2);
    long rows = s.numel() / (T > 0 ? T : 1);
    if (s.numel() == 0) return s;
    float div = (float)std::sqrt((double)q.size(2));
    float* p = s.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    unsigned blocks = (unsigned)((rows + WARPS - 1) / WARPS);
    if (T % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0)
        softmax_rows_warp<float4, 4><<<blocks, 32 * WARPS, 0, stream>>>(p, rows, T, div);
    else
        softmax_rows_warp<float, 1><<<blocks, 32 * WARPS, 0, stream>>>(p, rows, T, div);
    return s;
}
"""
CPP = "torch::Tensor attn_probs(torch::Tensor q, torch::Tensor k);"

ext = load_inline(name="real_attention_scores_softmax_faster_bmm_warp_softmax", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["attn_probs"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return ext.attn_probs(q, k)
