"""faster (hoped): CUDA LayerNorm, one 512-thread block per row staged once in dynamic shared memory with float4 loads (32 KiB for 8192 floats), exact two-pass statistics read back from shared memory, float4 output; rows wider than 44 KiB re-read global memory instead."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 512
#define MAX_SMEM_FLOATS 11264  // 44 KiB: static + dynamic shared memory stays under 48 KiB without an opt-in

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* red) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();  // red may still be read from the previous call
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < THREADS / 32 ? red[lane] : 0.f);
        if (lane == 0) red[THREADS / 32] = v;
    }
    __syncthreads();
    return red[THREADS / 32];
}

// STAGE: the row lives in shared memory (cols % 4 == 0, 16-byte aligned, cols <= MAX_SMEM_FLOATS);
// otherwise the statistics passes read global memory again
template <bool STAGE>
__global__ void __launch_bounds__(THREADS) layernorm_smem_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                                 const float* __restrict__ b, float* __restrict__ y,
                                                                 long cols, float eps) {
    extern __shared__ float4 row4[];
    __shared__ float red[THREADS / 32 + 1];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    const long cols4 = cols / 4;
    float s = 0.f;
    if (STAGE) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (long j = threadIdx.x; j < cols4; j += THREADS) {
            float4 v = x4[j];
            row4[j] = v;
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += THREADS) s += xr[j];
    }
    const float mean = block_sum(s, red) / (float)cols;  // its barriers also publish row4
    float q = 0.f;
    if (STAGE) {
        for (long j = threadIdx.x; j < cols4; j += THREADS) {
            float4 v = row4[j];
            float a = v.x - mean, c = v.y - mean, d = v.z - mean, e = v.w - mean;
            q += (a * a + c * c) + (d * d + e * e);
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += THREADS) {
            float d = xr[j] - mean;
            q += d * d;
        }
    }
    const float rstd = rsqrtf(block_sum(q, red) / (float)cols + eps);
    if (STAGE) {
        const float4* w4 = reinterpret_cast<const float4*>(w);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (long j = threadIdx.x; j < cols4; j += THREADS) {
            float4 v = row4[j], g = w4[j], h = b4[j], o;
            o.x = (v.x - mean) * rstd * g.x + h.x;
            o.y = (v.y - mean) * rstd * g.y + h.y;
            o.z = (v.z - mean) * rstd * g.z + h.z;
            o.w = (v.w - mean) * rstd * g.w + h.w;
            y4[j] = o;
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += THREADS) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
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
    const bool stage = cols % 4 == 0 && cols <= MAX_SMEM_FLOATS && aligned16(src) && aligned16(dst) && aligned16(wp) &&
                       aligned16(bp);
    if (stage)
        layernorm_smem_kernel<true><<<(unsigned)rows, THREADS, cols * sizeof(float), stream>>>(src, wp, bp, dst, cols,
                                                                                              (float)eps);
    else
        layernorm_smem_kernel<false><<<(unsigned)rows, THREADS, 0, stream>>>(src, wp, bp, dst, cols, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

ext = load_inline(name="real_layernorm_wide_row_smem", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["layernorm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        return ext.layernorm(x, self.ln.weight.detach(), self.ln.bias.detach(), self.ln.eps)
