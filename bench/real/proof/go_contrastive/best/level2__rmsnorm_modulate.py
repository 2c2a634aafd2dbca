# cudal1 best for task level2/rmsnorm_modulate: speedup 5.467x, status ok, found at step 0
"""faster (hoped): CUDA RMSNorm + modulation in one pass: a warp per token row (8 float4 per lane kept in registers), shuffle-only sum of squares, then y = x * r * (1 + scale[b]) + shift[b]."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define WARPS 8   // rows per 256-thread block
#define ITEMS 8   // float4s per lane: rows of up to 32 * ITEMS * 4 = 1024 floats stay in registers

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// x, y: (rows, D) with rows = B * T; scale, shift: (B, D). Needs D % 4 == 0, D / 4 <= 32 * ITEMS, 16-byte alignment.
__global__ void __launch_bounds__(WARPS * 32) rms_mod_regs(const float4* __restrict__ x, const float4* __restrict__ scale,
                                                           const float4* __restrict__ shift, float4* __restrict__ y,
                                                           long rows, long T, long D4, float eps) {
    long row = blockIdx.x * (long)WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;  // the whole warp leaves together
    long b = row / T;
    const float4* xr = x + row * D4;
    const float4* sc = scale + b * D4;
    const float4* sh = shift + b * D4;
    float4* yr = y + row * D4;
    float4 v[ITEMS];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = lane + 32L * k;
        v[k] = j < D4 ? xr[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        ss += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
    float r = rsqrtf(warp_sum(ss) / (float)(4 * D4) + eps);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = lane + 32L * k;
        if (j < D4) {
            float4 s = __ldg(sc + j), h = __ldg(sh + j), o;
            o.x = (v[k].x * r) * (1.f + s.x) + h.x;
            o.y = (v[k].y * r) * (1.f + s.y) + h.y;
            o.z = (v[k].z * r) * (1.f + s.z) + h.z;
            o.w = (v[k].w * r) * (1.f + s.w) + h.w;
            yr[j] = o;
        }
    }
}

// any D or alignment: a warp per row, the row read twice (the second time from L1/L2)
__global__ void __launch_bounds__(WARPS * 32) rms_mod_reread(const float* __restrict__ x, const float* __restrict__ scale,
                                                             const float* __restrict__ shift, float* __restrict__ y,
                                                             long rows, long T, long D, float eps) {
    long row = blockIdx.x * (long)WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    long b = row / T;
    const float* xr = x + row * D;
    float* yr = y + row * D;
    float ss = 0.f;
    for (long j = lane; j < D; j += 32) ss += xr[j] * xr[j];
    float r = rsqrtf(warp_sum(ss) / (float)D + eps);
    for (long j = lane; j < D; j += 32) yr[j] = (xr[j] * r) * (1.f + scale[b * D + j]) + shift[b * D + j];
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
    unsigned blocks = (unsigned)((rows + WARPS - 1) / WARPS);
    if (D % 4 == 0 && D / 4 <= 32 * ITEMS && aligned16(px) && aligned16(ps) && aligned16(ph) && aligned16(py))
        rms_mod_regs<<<blocks, WARPS * 32, 0, stream>>>(
            reinterpret_cast<const float4*>(px), reinterpret_cast<const float4*>(ps),
            reinterpret_cast<const float4*>(ph), reinterpret_cast<float4*>(py), rows, T, D / 4, (float)eps);
    else
        rms_mod_reread<<<blocks, WARPS * 32, 0, stream>>>(px, ps, ph, py, rows, T, D, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor rms_modulate(torch::Tensor x, torch::Tensor scale, torch::Tensor shift, double eps);"

ext = load_inline(name="real_rmsnorm_modulate_faster_warp_per_row", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["rms_modulate"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        return ext.rms_modulate(x, scale, shift, self.eps)

