"""wrong: two-pass CUDA MSE whose finishing block reads one partial per thread (256) while the first pass writes 8 per SM (1056 on an H200): about three quarters of the sum are lost."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cstdint>
#include <limits>

#define THREADS 256

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// the block's sum, valid in thread 0 only (called once per kernel)
template <typename T>
__device__ __forceinline__ T block_sum(T v) {
    __shared__ T partial[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = T(0);
    if (warp == 0) v = warp_sum(lane < THREADS / 32 ? partial[lane] : T(0));
    return v;
}

// pass 1: each block writes the sum of (p - t)^2 over its grid-stride share; VEC: p and t 16-byte aligned,
// the first n / 4 float4s go by float4 and the last n % 4 elements (and everything when !VEC) by the scalar loop
template <bool VEC>
__global__ void __launch_bounds__(THREADS) sq_diff_partial_kernel(const float* __restrict__ p, const float* __restrict__ t,
                                                                  float* __restrict__ partial, long n) {
    long i0 = blockIdx.x * (long)THREADS + threadIdx.x;
    long stride = (long)gridDim.x * THREADS;
    long done = 0;
    float acc = 0.f;
    if (VEC) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const float4* t4 = reinterpret_cast<const float4*>(t);
        long n4 = n / 4;
        for (long i = i0; i < n4; i += stride) {
            float4 a = p4[i], b = t4[i];
            float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
            acc += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
        done = 4 * n4;
    }
    for (long i = done + i0; i < n; i += stride) {
        float d = p[i] - t[i];
        acc += d * d;
    }
    float s = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// pass 2: one block adds the partials in double and divides by n (one partial per thread)
__global__ void __launch_bounds__(THREADS) finish_kernel(const float* __restrict__ partial, int blocks, double n,
                                                         float* __restrict__ out) {
    double acc = threadIdx.x < blocks ? partial[threadIdx.x] : 0.0;
    acc = block_sum(acc);
    if (threadIdx.x == 0) *out = (float)(acc / n);
}

static bool aligned16(const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; }

torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.is_cuda() && predictions.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "predictions and targets must have the same shape");
    auto p = predictions.contiguous();
    auto t = targets.contiguous();
    long n = p.numel();
    auto out = torch::empty({}, p.options());  // 0-dim, like torch.mean
    if (n == 0) return out.fill_(std::numeric_limits<float>::quiet_NaN());
    const float* pp = p.data_ptr<float>();
    const float* tp = t.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, (int)p.get_device()) != cudaSuccess || sms < 1)
        sms = 132;
    bool vec = aligned16(pp) && aligned16(tp);
    long items = vec ? n / 4 : n;
    int blocks = (int)std::min<long>(std::max<long>((items + THREADS - 1) / THREADS, 1), 8L * sms);
    auto partial = torch::empty({blocks}, p.options());
    if (vec)
        sq_diff_partial_kernel<true><<<blocks, THREADS, 0, stream>>>(pp, tp, partial.data_ptr<float>(), n);
    else
        sq_diff_partial_kernel<false><<<blocks, THREADS, 0, stream>>>(pp, tp, partial.data_ptr<float>(), n);
    finish_kernel<<<1, THREADS, 0, stream>>>(partial.data_ptr<float>(), blocks, (double)n, out.data_ptr<float>());
    return out;
}
"""
CPP = "torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets);"

ext = load_inline(name="demo_cuda_mse_loss_wrong_finish_one_partial", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mse_loss"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.mse_loss(predictions, targets)
