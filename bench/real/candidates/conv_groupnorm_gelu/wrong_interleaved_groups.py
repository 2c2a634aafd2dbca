"""wrong: cuDNN Conv2d + a block-per-group GroupNorm/GELU kernel that gathers group g from channels g, g + G, g + 2G, ... (interleaved) instead of the contiguous channels g*C/G .. (g+1)*C/G - 1, so every mean and variance mixes the wrong channels."""
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

// y, out: (N, C, HW) contiguous; block (n, g) normalises channels g + k * G, k < Cg
__global__ void __launch_bounds__(THREADS) gn_gelu_kernel(const float* __restrict__ y, const float* __restrict__ gamma,
                                                          const float* __restrict__ beta, float* __restrict__ out,
                                                          long Cg, long HW, int G, float eps) {
    long grp = blockIdx.x;
    long n = grp / G;
    int g = (int)(grp % G);
    long C = Cg * G;
    long M = Cg * HW;
    const float* sample = y + n * C * HW;
    float* osample = out + n * C * HW;

    float s = 0.f;
    for (long k = 0; k < Cg; ++k) {
        const float* sc = sample + (g + k * G) * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) s += sc[j];
    }
    float mean = (float)(block_sum_d(s) / (double)M);

    float q = 0.f;
    for (long k = 0; k < Cg; ++k) {
        const float* sc = sample + (g + k * G) * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) {
            float d = sc[j] - mean;
            q += d * d;
        }
    }
    float var = (float)(block_sum_d(q) / (double)M);
    float rstd = rsqrtf(var + eps);

    for (long k = 0; k < Cg; ++k) {
        long c = g + k * G;
        float a = rstd * gamma[c];
        float b = beta[c] - mean * a;
        const float* sc = sample + c * HW;
        float* dc = osample + c * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) dc[j] = gelu_erf(fmaf(sc[j], a, b));
    }
}

torch::Tensor gn_gelu(torch::Tensor y, torch::Tensor gamma, torch::Tensor beta, int64_t groups, double eps) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() >= 2, "CUDA float32 (N, C, ...) expected");
    TORCH_CHECK(gamma.is_cuda() && beta.is_cuda() && gamma.scalar_type() == torch::kFloat32 &&
                beta.scalar_type() == torch::kFloat32, "CUDA float32 affine parameters expected");
    long N = y.size(0), C = y.size(1);
    TORCH_CHECK(groups > 0 && C % groups == 0, "channels must divide into groups");
    TORCH_CHECK(gamma.numel() == C && beta.numel() == C, "affine parameters must have C entries");
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

ext = load_inline(name="real_conv_groupnorm_gelu_wrong_interleaved_groups", cpp_sources=CPP, cuda_sources=CUDA,
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
