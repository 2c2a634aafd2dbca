"""broken: the shared-memory tile is declared with the runtime channel count (`__shared__ float tile[ci_chunk][18][18]`), which nvcc rejects as a non-constant array size."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void conv3x3_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                               float* __restrict__ y, int Ci, int H, int W, int Co, int ci_chunk) {
    __shared__ float tile[ci_chunk][18][18];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tiles_x = (W + 15) / 16;
    int ox0 = (blockIdx.x % tiles_x) * 16, oy0 = (blockIdx.x / tiles_x) * 16;
    int co = blockIdx.y;
    long n = blockIdx.z;
    float acc = 0.f;
    for (int ci0 = 0; ci0 < Ci; ci0 += ci_chunk) {
        for (int i = ty * 16 + tx; i < ci_chunk * 18 * 18; i += 256) {
            int c = i / 324, r = (i / 18) % 18, col = i % 18;
            int iy = oy0 - 1 + r, ix = ox0 - 1 + col;
            tile[c][r][col] = (ci0 + c < Ci && iy >= 0 && iy < H && ix >= 0 && ix < W)
                                  ? x[((n * Ci + ci0 + c) * H + iy) * (long)W + ix] : 0.f;
        }
        __syncthreads();
        for (int c = 0; c < ci_chunk && ci0 + c < Ci; ++c)
            for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx)
                    acc += tile[c][ty + ky][tx + kx] * w[((long)co * Ci + ci0 + c) * 9 + ky * 3 + kx];
        __syncthreads();
    }
    int oy = oy0 + ty, ox = ox0 + tx;
    if (oy < H && ox < W) y[((n * Co + co) * H + oy) * (long)W + ox] = acc + b[co];
}

torch::Tensor conv3x3(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 input expected");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    int N = xc.size(0), Ci = xc.size(1), H = xc.size(2), W = xc.size(3), Co = wc.size(0);
    auto y = torch::empty({N, Co, H, W}, xc.options());
    int tiles = ((W + 15) / 16) * ((H + 15) / 16);
    conv3x3_kernel<<<dim3(tiles, Co, N), dim3(16, 16), 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), b.contiguous().data_ptr<float>(), y.data_ptr<float>(),
        Ci, H, W, Co, 8);
    return y;
}
"""
CPP = "torch::Tensor conv3x3(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="real_conv2d_runtime_shared_size", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["conv3x3"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return ext.conv3x3(x, self.conv.weight, self.conv.bias)
