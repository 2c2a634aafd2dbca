# cudal1 best for task level2/conv_relu_maxpool: speedup 1.842x, status ok, found at step 0
"""faster (hoped): cuDNN Conv2d without bias, then one CUDA kernel that max-pools 2x2, adds the bias after the max (exact: rounding is monotone) and applies ReLU; float4 loads from two rows, two outputs per thread stored as a float2 (no bias or ReLU pass over 128 MiB)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// y: (P, H, W) planes with W % 4 == 0, 16-byte aligned; thread q -> outputs (oh, 2k) and (oh, 2k + 1) of plane p
__global__ void bias_relu_pool2_vec(const float* __restrict__ y, const float* __restrict__ bias, float* __restrict__ out,
                                    long C, long H, long W, long Ho, long Wo, long total2) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total2) return;
    long W4 = W / 4;  // float4s per input row == output pairs per output row
    long k = i % W4;
    long t = i / W4;
    long oh = t % Ho;
    long p = t / Ho;
    const float4* r0 = reinterpret_cast<const float4*>(y + (p * H + 2 * oh) * W) + k;
    const float4* r1 = reinterpret_cast<const float4*>(y + (p * H + 2 * oh + 1) * W) + k;
    float4 a = *r0, b = *r1;
    float bi = __ldg(bias + p % C);
    float2 o;
    o.x = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(b.x, b.y)) + bi, 0.f);
    o.y = fmaxf(fmaxf(fmaxf(a.z, a.w), fmaxf(b.z, b.w)) + bi, 0.f);
    *reinterpret_cast<float2*>(out + (p * Ho + oh) * Wo + 2 * k) = o;
}

// any W: one output per thread
__global__ void bias_relu_pool2_scalar(const float* __restrict__ y, const float* __restrict__ bias, float* __restrict__ out,
                                       long C, long H, long W, long Ho, long Wo, long total) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long ow = i % Wo;
    long t = i / Wo;
    long oh = t % Ho;
    long p = t / Ho;
    const float* r0 = y + (p * H + 2 * oh) * W + 2 * ow;
    const float* r1 = r0 + W;
    float m = fmaxf(fmaxf(r0[0], r0[1]), fmaxf(r1[0], r1[1]));
    out[i] = fmaxf(m + __ldg(bias + p % C), 0.f);
}

static bool aligned(const void* ptr, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(ptr) % n == 0; }

torch::Tensor bias_relu_pool2(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() == 4, "CUDA float32 (N, C, H, W) expected");
    TORCH_CHECK(bias.is_cuda() && bias.scalar_type() == torch::kFloat32 && bias.numel() == y.size(1),
                "CUDA float32 bias with C entries expected");
    auto yc = y.contiguous();
    auto bc = bias.contiguous();
    long N = yc.size(0), C = yc.size(1), H = yc.size(2), W = yc.size(3);
    long Ho = H / 2, Wo = W / 2;
    auto out = torch::empty({N, C, Ho, Wo}, yc.options());
    long total = N * C * Ho * Wo;
    if (total == 0) return out;
    const float* src = yc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    const int threads = 256;
    if (W % 4 == 0 && aligned(src, 16) && aligned(dst, 8)) {
        long total2 = total / 2;  // Wo = W / 2 is even
        bias_relu_pool2_vec<<<(unsigned)((total2 + threads - 1) / threads), threads, 0, stream>>>(
            src, bc.data_ptr<float>(), dst, C, H, W, Ho, Wo, total2);
    } else {
        bias_relu_pool2_scalar<<<(unsigned)((total + threads - 1) / threads), threads, 0, stream>>>(
            src, bc.data_ptr<float>(), dst, C, H, W, Ho, Wo, total);
    }
    return out;
}
"""
CPP = "torch::Tensor bias_relu_pool2(torch::Tensor y, torch::Tensor bias);"

ext = load_inline(name="real_conv_relu_maxpool_faster_bias_float4_pool", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bias_relu_pool2"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        c = self.conv
        y = F.conv2d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups)
        return ext.bias_relu_pool2(y, c.bias)

