# level2/rmsnorm_modulate: 5.11x eager (custom_kernel), sample 6 of rl_contrastive
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 256
#define ITEMS 4  // float4s per thread: rows of up to THREADS * ITEMS * 4 = 4096 floats stay in registers

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// the block's sum, for every thread (once per kernel)
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < THREADS / 32; ++k) total += partial[k];
    return total;
}

__device__ __forceinline__ float modulate(float v, float r, float s, float h) { return (v * r) * (1.f + s) + h; }

// D % 4 == 0, D / 4 <= THREADS * ITEMS, 16-byte aligned
__global__ void __launch_bounds__(THREADS) rms_mod_regs(const float4* __restrict__ x, const float4* __restrict__ scale,
                                                        const float4* __restrict__ shift, float4* __restrict__ y,
                                                        long T, long D4, float eps) {
    long row = blockIdx.x;
    long b = row / T;
    const float4* xr = x + row * D4;
    float4* yr = y + row * D4;
    float4 v[ITEMS];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        v[k] = j < D4 ? xr[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        ss += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
    float r = rsqrtf(block_sum(ss) / (float)(4 * D4) + eps);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        if (j < D4) {
            float4 s = __ldg(scale + b * D4 + j), h = __ldg(shift + b * D4 + j);
            yr[j] = make_float4(modulate(v[k].x, r, s.x, h.x), modulate(v[k].y, r, s.y, h.y),
                                modulate(v[k].z, r, s.z, h.z), modulate(v[k].w, r, s.w, h.w));
        }
    }
}

// any other row: scalar, the row read twice
__global__ void __launch_bounds__(THREADS) rms_mod_reread(const float* __restrict__ x, const float* __restrict__ scale,
                                                          const float* __restrict__ shift, float* __restrict__ y,
                                                          long T, long D, float eps) {
    long row = blockIdx.x;
    long b = row / T;
    const float* xr = x + row * D;
    float* yr = y + row * D;
    float ss = 0.f;
    for (long j = threadIdx.x; j < D; j += THREADS) ss += xr[j] * xr[j];
    float r = rsqrtf(block_sum(ss) / (float)D + eps);
    for (long j = threadIdx.x; j < D; j += THREADS) yr[j] = modulate(xr[j], r, scale[b * D + j], shift[b * D + j]);
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor rms_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 3, "CUDA float32 (B, T, D) x expected");
    TORCH_CHECK(scale.is_cuda() && shift.is_cuda() && scale.scalar_type() == torch::kFloat32 &&
                shift.scalar_type() == torch::kFloat32, "CUDA float32 scale and shift expected");
    long B = x.size(0), T = x.size(1), D = x.size(2);
    TORCH_CHECK(scale.dim() == 2 && scale.size(0) == B && scale.size(1) == D && shift.sizes() == scale.sizes(),
                "scale and shift must be (B, D)");
    auto xc = x.contiguous();
    auto sc = scale.contiguous();
    auto sh = shift.contiguous();
    auto y = torch::empty_like(xc);
    long rows = B * T;
    if (rows == 0 || D == 0) return y;
    const float* px = xc.data_ptr<float>();
    const float* ps = sc.data_ptr<float>();
    const float* ph = sh.data_ptr<float>();
    float* py = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    if (D % 4 == 0 && D / 4 <= THREADS * ITEMS && aligned16(px) && aligned16(ps) && aligned16(ph) && aligned16(py))
        rms_mod_regs<<<(unsigned)rows, THREADS, 0, stream>>>(
            reinterpret_cast<const float4*>(px), reinterpret_cast<const float4*>(ps),
            reinterpret_cast<const float4*>(ph), reinterpret_cast<float4*>(py), T, D / 4, (float)eps);
    else
        rms_mod_reread<<<(unsigned)rows, THREADS, 0, stream>>>(px, ps, ph, py, T, D, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rms_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps);"

ext = load_inline(name="example_cuda_rmsnorm_modulate_faster_block_per_row", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rms_modulate"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        return ext.rms_modulate(x, scale, shift, self.eps)