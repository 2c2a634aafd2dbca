# cudal1 best for task level1/mse_loss: speedup 2.968x, status ok, found at step 0
"""faster (hoped): CUDA MSE in a single pass: float4 grid-stride sums of (p - t)^2, a shuffle block reduction, one atomicAdd of sum / n per block into a zeroed scalar."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cstdint>
#include <limits>

#define THREADS 512

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// VEC: p and t 16-byte aligned; n / 4 float4s, then the n % 4 tail (or everything when !VEC) one float at a time
template <bool VEC>
__global__ void __launch_bounds__(THREADS) mse_kernel(const float* __restrict__ p, const float* __restrict__ t,
                                                      float* __restrict__ out, long n, float inv_n) {
    long i0 = blockIdx.x * (long)THREADS + threadIdx.x;
    long stride = (long)gridDim.x * THREADS;
    long start = 0;
    float acc = 0.f;
    if (VEC) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const float4* t4 = reinterpret_cast<const float4*>(t);
        for (long i = i0; i < n / 4; i += stride) {
            float4 a = p4[i], b = t4[i];
            float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
            acc += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
        start = n / 4 * 4;
    }
    for (long i = start + i0; i < n; i += stride) {
        float d = p[i] - t[i];
        acc += d * d;
    }
    __shared__ float partial[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    acc = warp_sum(acc);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = warp_sum(lane < THREADS / 32 ? partial[lane] : 0.f);
        if (lane == 0) atomicAdd(out, acc * inv_n);
    }
}

static bool aligned16(const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; }

torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.is_cuda() && predictions.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "predictions and targets must have the same shape");
    auto p = predictions.contiguous();
    auto t = targets.contiguous();
    long n = p.numel();
    if (n == 0) return torch::full({}, std::numeric_limits<float>::quiet_NaN(), p.options());
    auto out = torch::zeros({}, p.options());  // 0-dim, like torch.mean; the blocks add into it
    const float* pp = p.data_ptr<float>();
    const float* tp = t.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, (int)p.get_device()) != cudaSuccess || sms < 1)
        sms = 132;
    bool vec = aligned16(pp) && aligned16(tp);
    long items = vec ? n / 4 : n;
    int blocks = (int)std::min<long>(std::max<long>((items + THREADS - 1) / THREADS, 1), 4L * sms);
    float inv_n = (float)(1.0 / (double)n);
    if (vec)
        mse_kernel<true><<<blocks, THREADS, 0, stream>>>(pp, tp, out.data_ptr<float>(), n, inv_n);
    else
        mse_kernel<false><<<blocks, THREADS, 0, stream>>>(pp, tp, out.data_ptr<float>(), n, inv_n);
    return out;
}
"""
CPP = "torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets);"

ext = load_inline(name="demo_cuda_mse_loss_faster_block_atomic", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mse_loss"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.mse_loss(predictions, targets)

