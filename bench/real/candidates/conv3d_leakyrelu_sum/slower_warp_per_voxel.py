"""slower: cuDNN Conv3d, then a CUDA kernel with one warp per output voxel, lane = channel, shuffle-summed: a warp's 32 loads land D*H*W floats apart (one 32-byte sector per 4 useful bytes)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define WARPS 8

// y: (N, C, S) contiguous; warp w -> output (n, s); lanes stride over the channels
__global__ void __launch_bounds__(WARPS * 32) leaky_sum_warp_kernel(const float* __restrict__ y, float* __restrict__ out,
                                                                    long C, long S, long total, float slope) {
    long w = blockIdx.x * (long)WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (w >= total) return;  // whole warp
    long n = w / S, s = w - n * S;
    const float* p = y + n * C * S + s;
    float acc = 0.f;
    for (long c = lane; c < C; c += 32) {
        float v = p[c * S];
        acc += v > 0.f ? v : v * slope;
    }
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) out[w] = acc;
}

torch::Tensor leaky_sum(torch::Tensor y, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() >= 2, "CUDA float32 (N, C, ...) expected");
    auto yc = y.contiguous();
    long N = yc.size(0), C = yc.size(1);
    long S = N * C > 0 ? yc.numel() / (N * C) : 0;
    std::vector<int64_t> shape;
    shape.push_back(N);
    for (int64_t d = 2; d < yc.dim(); ++d) shape.push_back(yc.size(d));
    auto out = torch::empty(shape, yc.options());
    long total = N * S;
    if (total == 0) return out;
    leaky_sum_warp_kernel<<<(unsigned)((total + WARPS - 1) / WARPS), WARPS * 32, 0, c10::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), out.data_ptr<float>(), C, S, total, (float)slope);
    return out;
}
"""
CPP = "torch::Tensor leaky_sum(torch::Tensor y, double slope);"

ext = load_inline(name="real_conv3d_leakyrelu_sum_slower_warp_per_voxel", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["leaky_sum"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return ext.leaky_sum(self.conv(x), 0.1)
