# level2/conv_relu_maxpool: 1.31x eager (custom_kernel), sample 6 of rl_contrastive
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// y: (P, H, W) contiguous planes (P = N * C); out: (P, Ho, Wo), Ho = H / 2, Wo = W / 2 (floor, as MaxPool2d(2))
__global__ void relu_pool2_kernel(const float* __restrict__ y, float* __restrict__ out, long H, long W, long Ho, long Wo,
                                  long total) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long ow = i % Wo;
    long t = i / Wo;
    long oh = t % Ho;
    long p = t / Ho;
    const float* r0 = y + (p * H + 2 * oh) * W + 2 * ow;
    const float* r1 = r0 + W;
    float m = fmaxf(fmaxf(r0[0], r0[1]), fmaxf(r1[0], r1[1]));
    out[i] = fmaxf(m, 0.f);
}

torch::Tensor relu_pool2(torch::Tensor y) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() == 4, "CUDA float32 (N, C, H, W) expected");
    auto yc = y.contiguous();
    long N = yc.size(0), C = yc.size(1), H = yc.size(2), W = yc.size(3);
    long Ho = H / 2, Wo = W / 2;
    auto out = torch::empty({N, C, Ho, Wo}, yc.options());
    long total = N * C * Ho * Wo;
    if (total == 0) return out;
    const int threads = 256;
    relu_pool2_kernel<<<(unsigned)((total + threads - 1) / threads), threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), out.data_ptr<float>(), H, W, Ho, Wo, total);
    return out;
}
"""
CPP = "torch::Tensor relu_pool2(torch::Tensor y);"

ext = load_inline(name="real_conv_relu_maxpool_faster_fused_relu_pool", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["relu_pool2"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return ext.relu_pool2(self.conv(x))