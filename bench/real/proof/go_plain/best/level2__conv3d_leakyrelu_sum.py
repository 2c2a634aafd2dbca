# cudal1 best for task level2/conv3d_leakyrelu_sum: speedup 1.336x, status ok, found at step 0
"""faster (hoped): cuDNN Conv3d without bias, then one CUDA kernel that adds the bias, applies LeakyReLU(0.1) and sums the channels, four voxels per thread with float4 loads (no separate bias pass)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float leaky(float v, float slope) { return v > 0.f ? v : v * slope; }

// y: (N, C, S) contiguous with S % 4 == 0 and 16-byte aligned; thread q -> voxels 4q..4q+3 of one sample
__global__ void bias_leaky_sum_vec(const float4* __restrict__ y, const float* __restrict__ bias, float4* __restrict__ out,
                                   long C, long S4, long total4, float slope) {
    long q = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (q >= total4) return;
    long n = q / S4, s4 = q - n * S4;
    const float4* p = y + n * C * S4 + s4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (long c = 0; c < C; ++c) {
        float4 v = p[c * S4];
        float b = __ldg(bias + c);
        acc.x += leaky(v.x + b, slope);
        acc.y += leaky(v.y + b, slope);
        acc.z += leaky(v.z + b, slope);
        acc.w += leaky(v.w + b, slope);
    }
    out[q] = acc;
}

// any S or alignment: one voxel per thread
__global__ void bias_leaky_sum_scalar(const float* __restrict__ y, const float* __restrict__ bias, float* __restrict__ out,
                                      long C, long S, long total, float slope) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long n = i / S, s = i - n * S;
    const float* p = y + n * C * S + s;
    float acc = 0.f;
    for (long c = 0; c < C; ++c) acc += leaky(p[c * S] + __ldg(bias + c), slope);
    out[i] = acc;
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor bias_leaky_sum(torch::Tensor y, torch::Tensor bias, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() >= 2, "CUDA float32 (N, C, ...) expected");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32, "CUDA float32 bias expected");
    TORCH_CHECK(bias.numel() == y.size(1), "bias must have C entries");
    auto yc = y.contiguous();
    auto bc = bias.contiguous();
    long N = yc.size(0), C = yc.size(1);
    long S = N * C > 0 ? yc.numel() / (N * C) : 0;
    std::vector<int64_t> shape;
    shape.push_back(N);
    for (int64_t d = 2; d < yc.dim(); ++d) shape.push_back(yc.size(d));
    auto out = torch::empty(shape, yc.options());
    long total = N * S;
    if (total == 0) return out;
    const int threads = 256;
    auto stream = c10::cuda::getCurrentCUDAStream();
    const float* src = yc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    if (S % 4 == 0 && aligned16(src) && aligned16(dst)) {
        long total4 = total / 4;
        bias_leaky_sum_vec<<<(unsigned)((total4 + threads - 1) / threads), threads, 0, stream>>>(
            reinterpret_cast<const float4*>(src), bc.data_ptr<float>(), reinterpret_cast<float4*>(dst), C, S / 4,
            total4, (float)slope);
    } else {
        bias_leaky_sum_scalar<<<(unsigned)((total + threads - 1) / threads), threads, 0, stream>>>(
            src, bc.data_ptr<float>(), dst, C, S, total, (float)slope);
    }
    return out;
}
"""
CPP = "torch::Tensor bias_leaky_sum(torch::Tensor y, torch::Tensor bias, double slope);"

ext = load_inline(name="real_conv3d_leakyrelu_sum_faster_bias_float4_epilogue", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_leaky_sum"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        c = self.conv
        y = F.conv3d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups)
        return ext.bias_leaky_sum(y, c.bias, 0.1)

