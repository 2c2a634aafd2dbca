# level2/conv_groupnorm_gelu: 1.19x eager (custom_kernel), sample 7 of ssl
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define THREADS 512

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// the block's sum for every thread; may be called several times in a row
__device__ double block_sum_d(double v) {
    __shared__ double partial[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum_d(v);
    __syncthreads();  // earlier readers of partial are done
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    double total = 0.0;
#pragma unroll
    for (int k = 0; k < THREADS / 32; ++k) total += partial[k];
    return total;
}

__device__ __forceinline__ float gelu_erf(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678118654752440f)); }

// y, out: (N, C, HW) contiguous; group (n, g) is the contiguous run of Cg * HW floats starting at (n * G + g) * Cg * HW
__global__ void __launch_bounds__(THREADS) gn_gelu_kernel(const float* __restrict__ y, const float* __restrict__ gamma,
                                                          const float* __restrict__ beta, float* __restrict__ out,
                                                          long Cg, long HW, int G, float eps) {
    long grp = blockIdx.x;
    int g = (int)(grp % G);
    long M = Cg * HW;
    const float* src = y + grp * M;
    float* dst = out + grp * M;

    float s = 0.f;
    for (long i = threadIdx.x; i < M; i += THREADS) s += src[i];
    float mean = (float)(block_sum_d(s) / (double)M);

    float q = 0.f;
    for (long i = threadIdx.x; i < M; i += THREADS) {
        float d = src[i] - mean;
        q += d * d;
    }
    float var = (float)(block_sum_d(q) / (double)M);
    float rstd = rsqrtf(var + eps);

    for (long cl = 0; cl < Cg; ++cl) {
        long c = (long)g * Cg + cl;
        float a = rstd * gamma[c];
        float b = beta[c] - mean * a;
        const float* sc = src + cl * HW;
        float* dc = dst + cl * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) dc[j] = gelu_erf(fmaf(sc[j], a, b));
    }
}

torch::Tensor gn_gelu(torch::Tensor y, torch::Tensor gamma, torch::Tensor beta, int64_t groups, double eps) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() >= 2, "CUDA float32 (N, C, ...) expected");
    TORCH_CHECK(gamma.is_cuda() && beta.is_cuda() && gamma.scalar_type() == torch::kFloat32 &&
                beta.scalar_type() == torch::kFloat32, "CUDA float32 affine expected");
    long N = y.size(0), C = y.size(1);
    TORCH_CHECK(groups > 0 && C % groups == 0, "channels must divide into groups");
    TORCH_CHECK(gamma.numel() == C && beta.numel() == C, "affine must have a scalar per channel");
    auto yc = y.contiguous();
    auto gc = gamma.contiguous();
    auto bc = beta.contiguous();
    auto out = torch::empty_like(yc);
    long HW = N * C > 0 ? yc.numel() / (N * C) : 0;
    if (yc.numel() == 0) return out;
    long blocks = N * groups;
    gn_gelu_kernel<<<(unsigned)blocks, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), gc.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), C / groups, HW,
        (int)groups, (float)eps);
    return out;
}
"""
CPP = "torch::Tensor gn_gelu(torch::Tensor y, torch::Tensor gamma, torch::Tensor beta, int64_t groups, double eps);"

ext = load_inline(name="real_conv_groupnorm_gelu_faster_block_per_group", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["gn_gelu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gn = nn.GroupNorm(num_groups, out_channels)
        nn.init.normal_(self.gn.weight, 1.0, 0.1)
        nn.init.normal_(self.gn.bias, 0.0, 0.1)

    def forward(self, x):
        return ext.gn_gelu(self.conv(x), self.gn.weight, self.gn.bias, self.gn.num_groups, self.gn.eps)