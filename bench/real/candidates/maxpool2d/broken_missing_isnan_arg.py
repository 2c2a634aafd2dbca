"""broken: the NaN-propagating max helper calls isnan() with no argument (a slip while inlining it), which nvcc rejects."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__device__ __forceinline__ float nmax(float a, float b) { return (b > a || isnan()) ? b : a; }

__global__ void maxpool_kernel(const float* __restrict__ x, float* __restrict__ y, long total,
                               int H, int W, int Ho, int Wo, int K, int S, int P) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int ox = i % Wo, oy = (i / Wo) % Ho;
    const long plane = i / ((long)Wo * Ho);
    const float* base = x + plane * H * (long)W;
    float m = -INFINITY;
    for (int ky = 0; ky < K; ++ky) {
        int iy = oy * S - P + ky;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < K; ++kx) {
            int ix = ox * S - P + kx;
            if (ix >= 0 && ix < W) m = nmax(m, base[(long)iy * W + ix]);
        }
    }
    y[i] = m;
}

torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    auto xc = x.contiguous();
    const int H = xc.size(2), W = xc.size(3);
    const int Ho = (H + 2 * p - k) / s + 1, Wo = (W + 2 * p - k) / s + 1;
    auto y = torch::empty({xc.size(0), xc.size(1), Ho, Wo}, xc.options());
    const long total = y.numel();
    maxpool_kernel<<<(unsigned)((total + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), total, H, W, Ho, Wo, k, s, p);
    return y;
}
"""
CPP = "torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p);"

ext = load_inline(name="real_maxpool2d_missing_isnan_arg", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["maxpool2d"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.maxpool2d(x, self.k, self.s, self.p)
