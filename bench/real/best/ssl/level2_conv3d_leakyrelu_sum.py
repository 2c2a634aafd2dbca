# level2/conv3d_leakyrelu_sum: 1.11x eager (custom_kernel), sample 3 of ssl
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// y: (N, C, S) contiguous, S = D * H * W; out: (N, S). Thread i -> (n, s); a warp reads 32 consecutive s of one channel.
__global__ void leaky_sum_kernel(const float* __restrict__ y, float* __restrict__ out, long C, long S, long total,
                                 float slope) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    long n = i / S, s = i - n * S;
    const float* p = y + n * C * S + s;
    float acc = 0.f;
    for (long c = 0; c < C; ++c) {
        float v = p[c * S];
        acc += v > 0.f ? v : v * slope;
    }
    out[i] = acc;
}

torch::Tensor leaky_sum(torch::Tensor y, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32, "CUDA float32 tensor expected");
    TORCH_CHECK(y.dim() >= 2, "expected (N, C, ...)");
    auto yc = y.contiguous();
    long N = yc.size(0), C = yc.size(1);
    long S = N * C > 0 ? yc.numel() / (N * C) : 0;
    std::vector<int64_t> shape;
    shape.push_back(N);
    for (int64_t d = 2; d < yc.dim(); ++d) shape.push_back(yc.size(d));
    auto out = torch::empty(shape, yc.options());
    long total = N * S;
    if (total == 0) return out;
    const int threads = 256;
    leaky_sum_kernel<<<(unsigned)((total + threads - 1) / threads), threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), out.data_ptr<float>(), C, S, total, (float)slope);
    return out;
}
"""
CPP = "torch::Tensor leaky_sum(torch::Tensor y, double slope);"

ext = load_inline(name="real_conv3d_leakyrelu_sum_faster_fused_epilogue", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["leaky_sum"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return ext.leaky_sum(self.conv(x), 0.1)