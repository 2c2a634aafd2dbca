# cudal1 best for task level2/conv_groupnorm_gelu: speedup 1.587x, status ok, found at step 0
"""faster (hoped): cuDNN Conv2d without bias, then one CUDA kernel (a block per group) that adds the conv bias, takes shifted one-pass sums (double accumulators) for mean and variance with float4 loads, then writes exact GELU(GroupNorm): two reads of the group, one write."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 512

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ double block_sum_d(double v) {
    __shared__ double partial[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum_d(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    double total = 0.0;
#pragma unroll
    for (int k = 0; k < THREADS / 32; ++k) total += partial[k];
    return total;
}

__device__ __forceinline__ float gelu_erf(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678118654752440f)); }

// VEC: HW % 4 == 0 and 16-byte aligned pointers, so every channel row starts on a float4
template <bool VEC>
__global__ void __launch_bounds__(THREADS) bias_gn_gelu_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                                               const float* __restrict__ gamma,
                                                               const float* __restrict__ beta, float* __restrict__ out,
                                                               long Cg, long HW, int G, float eps) {
    long grp = blockIdx.x;
    int g = (int)(grp % G);
    long M = Cg * HW;
    const float* src = y + grp * M;
    float* dst = out + grp * M;
    const long c0 = (long)g * Cg;
    const float K = src[0] + bias[c0];  // shift: sums of (v - K) keep the variance free of cancellation

    double s = 0.0, q = 0.0;  // shifted sums; double keeps Q / M - mean^2 free of rounding
    for (long cl = 0; cl < Cg; ++cl) {
        const float b = bias[c0 + cl];
        const float* sc = src + cl * HW;
        if (VEC) {
            const float4* s4 = reinterpret_cast<const float4*>(sc);
            for (long j = threadIdx.x; j < HW / 4; j += THREADS) {
                float4 v = s4[j];
                float d0 = (v.x + b) - K, d1 = (v.y + b) - K, d2 = (v.z + b) - K, d3 = (v.w + b) - K;
                s += (double)((d0 + d1) + (d2 + d3));
                q += ((double)d0 * d0 + (double)d1 * d1) + ((double)d2 * d2 + (double)d3 * d3);
            }
        } else {
            for (long j = threadIdx.x; j < HW; j += THREADS) {
                float d = (sc[j] + b) - K;
                s += d;
                q += (double)d * d;
            }
        }
    }
    double S = block_sum_d(s), Q = block_sum_d(q);
    double md = S / (double)M;
    double var = Q / (double)M - md * md;
    if (var < 0.0) var = 0.0;
    const float mean = (float)((double)K + md);
    const float rstd = rsqrtf((float)var + eps);

    for (long cl = 0; cl < Cg; ++cl) {
        const long c = c0 + cl;
        const float bi = bias[c];
        const float a = rstd * gamma[c];
        const float sh = beta[c] - mean * a;
        const float* sc = src + cl * HW;
        float* dc = dst + cl * HW;
        if (VEC) {
            const float4* s4 = reinterpret_cast<const float4*>(sc);
            float4* d4 = reinterpret_cast<float4*>(dc);
            for (long j = threadIdx.x; j < HW / 4; j += THREADS) {
                float4 v = s4[j];
                v.x = gelu_erf(fmaf(v.x + bi, a, sh));
                v.y = gelu_erf(fmaf(v.y + bi, a, sh));
                v.z = gelu_erf(fmaf(v.z + bi, a, sh));
                v.w = gelu_erf(fmaf(v.w + bi, a, sh));
                d4[j] = v;
            }
        } else {
            for (long j = threadIdx.x; j < HW; j += THREADS) dc[j] = gelu_erf(fmaf(sc[j] + bi, a, sh));
        }
    }
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor bias_gn_gelu(torch::Tensor y, torch::Tensor bias, torch::Tensor gamma, torch::Tensor beta, int64_t groups,
                           double eps) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() >= 2, "CUDA float32 (N, C, ...) expected");
    for (const auto& t : {bias, gamma, beta})
        TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32, "CUDA float32 parameters expected");
    long N = y.size(0), C = y.size(1);
    TORCH_CHECK(groups > 0 && C % groups == 0, "channels must divide into groups");
    TORCH_CHECK(bias.numel() == C && gamma.numel() == C && beta.numel() == C, "parameters must have C entries");
    auto yc = y.contiguous();
    auto bc = bias.contiguous();
    auto gc = gamma.contiguous();
    auto ec = beta.contiguous();
    auto out = torch::empty_like(yc);
    if (yc.numel() == 0) return out;
    long HW = yc.numel() / (N * C);
    const float* src = yc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    unsigned blocks = (unsigned)(N * groups);
    if (HW % 4 == 0 && aligned16(src) && aligned16(dst))
        bias_gn_gelu_kernel<true><<<blocks, THREADS, 0, stream>>>(src, bc.data_ptr<float>(), gc.data_ptr<float>(),
                                                                  ec.data_ptr<float>(), dst, C / groups, HW,
                                                                  (int)groups, (float)eps);
    else
        bias_gn_gelu_kernel<false><<<blocks, THREADS, 0, stream>>>(src, bc.data_ptr<float>(), gc.data_ptr<float>(),
                                                                   ec.data_ptr<float>(), dst, C / groups, HW,
                                                                   (int)groups, (float)eps);
    return out;
}
"""
CPP = ("torch::Tensor bias_gn_gelu(torch::Tensor y, torch::Tensor bias, torch::Tensor gamma, torch::Tensor beta, "
       "int64_t groups, double eps);")

ext = load_inline(name="real_conv_groupnorm_gelu_faster_bias_float4_shifted", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_gn_gelu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gn = nn.GroupNorm(num_groups, out_channels)
        nn.init.normal_(self.gn.weight, 1.0, 0.1)
        nn.init.normal_(self.gn.bias, 0.0, 0.1)

    def forward(self, x):
        c = self.conv
        y = F.conv2d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups)
        return ext.bias_gn_gelu(y, c.bias, self.gn.weight, self.gn.bias, self.gn.num_groups, self.gn.eps)

