"""slower: hand-written direct 3x3 convolution, a 16x16 output tile and 16 output channels per block, 8 input channels at a time staged in shared memory (halo included); plain FP32 FMAs cannot match cuDNN."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

#define TILE 16       // output tile is TILE x TILE pixels, one pixel per thread
#define CO_T 16       // output channels per block (accumulators per thread)
#define CI_CHUNK 8    // input channels staged in shared memory per step

template <int K>
__global__ void __launch_bounds__(TILE * TILE) conv2d_tiled_kernel(
        const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
        float* __restrict__ y, int Ci, int H, int W, int Co, int tiles_x) {
    constexpr int P = K / 2;
    constexpr int S = TILE + K - 1;
    __shared__ float in_s[CI_CHUNK][S][S];
    __shared__ __align__(16) float w_s[CI_CHUNK][K * K][CO_T];

    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE + tx;
    const int ox0 = (blockIdx.x % tiles_x) * TILE, oy0 = (blockIdx.x / tiles_x) * TILE;
    const int co0 = blockIdx.y * CO_T;
    const long n = blockIdx.z;

    float acc[CO_T];
#pragma unroll
    for (int q = 0; q < CO_T; ++q) acc[q] = 0.f;

    for (int ci0 = 0; ci0 < Ci; ci0 += CI_CHUNK) {
        // input tile with halo; zero outside the image and past the last input channel
        for (int i = tid; i < CI_CHUNK * S * S; i += TILE * TILE) {
            int c = i / (S * S), r = (i / S) % S, col = i % S;
            int iy = oy0 - P + r, ix = ox0 - P + col, ci = ci0 + c;
            float v = 0.f;
            if (ci < Ci && iy >= 0 && iy < H && ix >= 0 && ix < W)
                v = x[((n * Ci + ci) * H + iy) * (long)W + ix];
            in_s[c][r][col] = v;
        }
        // weights [co][ci][ky][kx] -> w_s[ci][tap][co]; zero past the last channel
        for (int i = tid; i < CI_CHUNK * K * K * CO_T; i += TILE * TILE) {
            int co = i % CO_T, t = (i / CO_T) % (K * K), c = i / (CO_T * K * K);
            float v = 0.f;
            if (ci0 + c < Ci && co0 + co < Co) v = w[((long)(co0 + co) * Ci + ci0 + c) * (K * K) + t];
            w_s[c][t][co] = v;
        }
        __syncthreads();
#pragma unroll 2
        for (int c = 0; c < CI_CHUNK; ++c) {
#pragma unroll
            for (int ky = 0; ky < K; ++ky) {
#pragma unroll
                for (int kx = 0; kx < K; ++kx) {
                    float v = in_s[c][ty + ky][tx + kx];
                    const float4* wp = reinterpret_cast<const float4*>(&w_s[c][ky * K + kx][0]);
#pragma unroll
                    for (int q = 0; q < CO_T / 4; ++q) {
                        float4 g = wp[q];
                        acc[4 * q + 0] = fmaf(v, g.x, acc[4 * q + 0]);
                        acc[4 * q + 1] = fmaf(v, g.y, acc[4 * q + 1]);
                        acc[4 * q + 2] = fmaf(v, g.z, acc[4 * q + 2]);
                        acc[4 * q + 3] = fmaf(v, g.w, acc[4 * q + 3]);
                    }
                }
            }
        }
        __syncthreads();
    }
    const int oy = oy0 + ty, ox = ox0 + tx;
    if (oy < H && ox < W) {
#pragma unroll
        for (int q = 0; q < CO_T; ++q) {
            int co = co0 + q;
            if (co < Co) y[((n * Co + co) * H + oy) * (long)W + ox] = acc[q] + b[co];
        }
    }
}

torch::Tensor conv2d_same(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kFloat32 && w.dim() == 4, "CUDA float32 weight expected");
    TORCH_CHECK(b.is_cuda() && b.scalar_type() == torch::kFloat32, "CUDA float32 bias expected");
    TORCH_CHECK(w.size(2) == 3 && w.size(3) == 3, "only 3x3 kernels are implemented");
    TORCH_CHECK(w.size(1) == x.size(1) && b.numel() == w.size(0), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const int N = xc.size(0), Ci = xc.size(1), H = xc.size(2), W = xc.size(3), Co = wc.size(0);
    auto y = torch::empty({N, Co, H, W}, xc.options());
    if (y.numel() == 0) return y;
    TORCH_CHECK(N <= 65535, "batch too large for grid.z");
    const int tiles_x = (W + TILE - 1) / TILE, tiles_y = (H + TILE - 1) / TILE;
    dim3 grid(tiles_x * tiles_y, (Co + CO_T - 1) / CO_T, N);
    dim3 block(TILE, TILE);
    conv2d_tiled_kernel<3><<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), Ci, H, W, Co, tiles_x);
    return y;
}
"""
CPP = "torch::Tensor conv2d_same(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="real_conv2d_smem_tiled_direct", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["conv2d_same"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return ext.conv2d_same(x, self.conv.weight, self.conv.bias)
