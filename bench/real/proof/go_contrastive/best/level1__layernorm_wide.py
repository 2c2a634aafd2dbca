# cudal1 best for task level1/layernorm_wide: speedup 1.644x, status ok, found at step 0
"""faster (hoped): CUDA LayerNorm, one 256-thread block per row kept in registers (up to 8 float4 per thread), exact two-pass mean/variance with warp-shuffle block sums, one read and one write per element; a three-pass kernel takes other widths."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 256
#define ITEMS 8  // float4 per thread: rows up to THREADS * ITEMS * 4 = 8192 floats stay in registers

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block sum handed to every thread; the leading barrier lets it be called twice on the same buffer
__device__ __forceinline__ float block_sum(float v, float* buf) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < THREADS / 32 ? buf[lane] : 0.f);
        if (lane == 0) buf[THREADS / 32] = v;
    }
    __syncthreads();
    return buf[THREADS / 32];
}

__global__ void __launch_bounds__(THREADS) layernorm_regs_kernel(const float4* __restrict__ x, const float4* __restrict__ w,
                                                                 const float4* __restrict__ b, float4* __restrict__ y,
                                                                 long cols4, float eps) {
    __shared__ float buf[THREADS / 32 + 1];
    const float4* xr = x + blockIdx.x * cols4;
    float4* yr = y + blockIdx.x * cols4;
    float4 v[ITEMS];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        v[k] = j < cols4 ? xr[j] : make_float4(0.f, 0.f, 0.f, 0.f);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float n = (float)(4 * cols4);
    const float mean = block_sum(s, buf) / n;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        if (j < cols4) {  // padded lanes would add mean^2 each
            float a = v[k].x - mean, c = v[k].y - mean, d = v[k].z - mean, e = v[k].w - mean;
            q += (a * a + c * c) + (d * d + e * e);
        }
    }
    const float rstd = rsqrtf(block_sum(q, buf) / n + eps);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        long j = threadIdx.x + (long)k * THREADS;
        if (j < cols4) {
            float4 g = w[j], h = b[j], o;
            o.x = (v[k].x - mean) * rstd * g.x + h.x;
            o.y = (v[k].y - mean) * rstd * g.y + h.y;
            o.z = (v[k].z - mean) * rstd * g.z + h.z;
            o.w = (v[k].w - mean) * rstd * g.w + h.w;
            yr[j] = o;
        }
    }
}

// any width or alignment: mean pass, variance pass, output pass, each reading the row again (L2 mostly)
__global__ void __launch_bounds__(THREADS) layernorm_generic_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                                    const float* __restrict__ b, float* __restrict__ y,
                                                                    long cols, float eps) {
    __shared__ float buf[THREADS / 32 + 1];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float s = 0.f;
    for (long j = threadIdx.x; j < cols; j += THREADS) s += xr[j];
    const float mean = block_sum(s, buf) / (float)cols;
    float q = 0.f;
    for (long j = threadIdx.x; j < cols; j += THREADS) {
        float d = xr[j] - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, buf) / (float)cols + eps);
    for (long j = threadIdx.x; j < cols; j += THREADS) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 input expected");
    TORCH_CHECK(weight.is_cuda() && bias.is_cuda() && weight.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "CUDA float32 affine expected");
    TORCH_CHECK(weight.numel() == x.size(-1) && bias.numel() == x.size(-1), "affine must match the last dim");
    auto xc = x.contiguous();
    auto wc = weight.contiguous(), bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    if (y.numel() == 0) return y;
    const long cols = xc.size(-1), rows = xc.numel() / cols;
    TORCH_CHECK(rows < (1L << 31), "too many rows");
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    const float* wp = wc.data_ptr<float>();
    const float* bp = bc.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const bool vec = cols % 4 == 0 && aligned16(src) && aligned16(dst) && aligned16(wp) && aligned16(bp);
    if (vec && cols / 4 <= THREADS * ITEMS)
        layernorm_regs_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<const float4*>(wp), reinterpret_cast<const float4*>(bp),
            reinterpret_cast<float4*>(dst), cols / 4, (float)eps);
    else
        layernorm_generic_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(src, wp, bp, dst, cols, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

ext = load_inline(name="real_layernorm_wide_row_registers", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["layernorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        return ext.layernorm(x, self.ln.weight.detach(), self.ln.bias.detach(), self.ln.eps)

