# level1/maxpool2d: 1.53x eager (custom_kernel), sample 7 of rl_contrastive
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void maxpool_thread_per_output_kernel(const float* __restrict__ x, float* __restrict__ y, long total,
                                                 int H, int W, int Ho, int Wo, int K, int S, int P) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= total) return;
    const int ox = i % Wo;
    const long t = i / Wo;
    const int oy = t % Ho;
    const long plane = t / Ho;
    const float* base = x + plane * H * (long)W;
    const int y0 = oy * S - P, x0 = ox * S - P;
    const int ya = max(y0, 0), yb = min(y0 + K, H);
    const int xa = max(x0, 0), xb = min(x0 + K, W);
    float m = -INFINITY;
    for (int iy = ya; iy < yb; ++iy) {
        const float* row = base + (long)iy * W;
        for (int ix = xa; ix < xb; ++ix) {
            float v = __ldg(row + ix);
            if (v > m || isnan(v)) m = v;
        }
    }
    y[i] = m;
}

torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(k > 0 && s > 0 && p >= 0 && 2 * p <= k, "bad pooling parameters");
    auto xc = x.contiguous();
    const long N = xc.size(0), C = xc.size(1);
    const int H = xc.size(2), W = xc.size(3);
    const int Ho = (H + 2 * p - k) / s + 1, Wo = (W + 2 * p - k) / s + 1;
    TORCH_CHECK(Ho > 0 && Wo > 0, "output would be empty");
    auto y = torch::empty({N, C, Ho, Wo}, xc.options());
    const long total = y.numel();
    if (total == 0) return y;
    const long blocks = (total + 255) / 256;
    TORCH_CHECK(blocks < (1L << 31), "too many outputs");
    maxpool_thread_per_output_kernel<<<(unsigned)blocks, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), total, H, W, Ho, Wo, k, s, p);
    return y;
}
"""
CPP = "torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p);"

ext = load_inline(name="real_maxpool2d_thread_per_output", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["maxpool2d"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.maxpool2d(x, self.k, self.s, self.p)