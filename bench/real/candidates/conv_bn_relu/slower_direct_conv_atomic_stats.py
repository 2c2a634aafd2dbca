"""slower: hand-written shared-memory-tiled direct 3x3 conv (no bias: training-mode BN cancels it) whose epilogue reduces each block's per-channel sum and sum of squares with warp shuffles into double atomics, then a finalize and an in-place scale-shift-ReLU pass; the FP32 direct conv is far behind cuDNN."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <vector>

#define TILE 16
#define CO_T 16
#define CI_CHUNK 8
#define NT (TILE * TILE)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// y = conv3x3(x, w) (same padding, no bias); stats[2*co] += sum, stats[2*co+1] += sum of squares over this block
__global__ void __launch_bounds__(NT) conv3x3_stats_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                           float* __restrict__ y, double* __restrict__ stats,
                                                           int Ci, int H, int W, int Co, int tiles_x) {
    constexpr int K = 3, P = 1, S = TILE + K - 1;
    __shared__ float in_s[CI_CHUNK][S][S];
    __shared__ __align__(16) float w_s[CI_CHUNK][K * K][CO_T];
    __shared__ float red[NT / 32][CO_T][2];

    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE + tx;
    const int ox0 = (blockIdx.x % tiles_x) * TILE, oy0 = (blockIdx.x / tiles_x) * TILE;
    const int co0 = blockIdx.y * CO_T;
    const long n = blockIdx.z;
    float acc[CO_T];
#pragma unroll
    for (int q = 0; q < CO_T; ++q) acc[q] = 0.f;

    for (int ci0 = 0; ci0 < Ci; ci0 += CI_CHUNK) {
        for (int i = tid; i < CI_CHUNK * S * S; i += NT) {
            int c = i / (S * S), r = (i / S) % S, col = i % S;
            int iy = oy0 - P + r, ix = ox0 - P + col, ci = ci0 + c;
            float v = 0.f;
            if (ci < Ci && iy >= 0 && iy < H && ix >= 0 && ix < W) v = x[((n * Ci + ci) * H + iy) * (long)W + ix];
            in_s[c][r][col] = v;
        }
        for (int i = tid; i < CI_CHUNK * K * K * CO_T; i += NT) {
            int q = i % CO_T, t = (i / CO_T) % (K * K), c = i / (CO_T * K * K);
            float v = 0.f;
            if (ci0 + c < Ci && co0 + q < Co) v = w[((long)(co0 + q) * Ci + ci0 + c) * (K * K) + t];
            w_s[c][t][q] = v;
        }
        __syncthreads();
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
    const bool inside = oy < H && ox < W;
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int q = 0; q < CO_T; ++q) {
        const int co = co0 + q;
        const float v = inside ? acc[q] : 0.f;  // pixels outside the image add nothing to the statistics
        if (inside && co < Co) y[((n * Co + co) * H + oy) * (long)W + ox] = v;
        const float s = warp_sum(v), s2 = warp_sum(v * v);
        if (lane == 0) { red[warp][q][0] = s; red[warp][q][1] = s2; }
    }
    __syncthreads();
    if (tid < 2 * CO_T) {
        const int q = tid / 2, k = tid % 2;
        if (co0 + q < Co) {
            double t = 0.0;
            for (int i = 0; i < NT / 32; ++i) t += (double)red[i][q][k];
            atomicAdd(&stats[2 * (co0 + q) + k], t);
        }
    }
}

__global__ void finalize_kernel(const double* __restrict__ stats, const float* __restrict__ w, const float* __restrict__ b,
                                float* __restrict__ scale, float* __restrict__ shift, float* __restrict__ mean_out,
                                float* __restrict__ var_out, int C, double count, double eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const double mean = stats[2 * c] / count;
    const double var = fmax(stats[2 * c + 1] / count - mean * mean, 0.0);
    const double sc = (double)w[c] / sqrt(var + eps);
    scale[c] = (float)sc;
    shift[c] = (float)((double)b[c] - mean * sc);
    mean_out[c] = (float)mean;
    var_out[c] = (float)var;
}

__global__ void scale_shift_relu_kernel(float* __restrict__ y, const float* __restrict__ scale,
                                        const float* __restrict__ shift, long total, int C, long HW) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int c = (i / HW) % C;
        y[i] = fmaxf(fmaf(y[i], scale[c], shift[c]), 0.f);
    }
}

std::vector<torch::Tensor> conv_bn_relu_train(torch::Tensor x, torch::Tensor w, torch::Tensor g, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kFloat32 && w.dim() == 4 && w.size(2) == 3 && w.size(3) == 3,
                "CUDA float32 3x3 weight expected");
    TORCH_CHECK(g.is_cuda() && b.is_cuda() && g.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "CUDA float32 affine expected");
    TORCH_CHECK(w.size(1) == x.size(1) && g.numel() == w.size(0) && b.numel() == w.size(0), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous(), gc = g.contiguous(), bc = b.contiguous();
    const int N = xc.size(0), Ci = xc.size(1), H = xc.size(2), W = xc.size(3), Co = wc.size(0);
    TORCH_CHECK((long)N * H * W > 0 && N <= 65535, "unsupported batch");
    auto opts = xc.options();
    auto y = torch::empty({N, Co, H, W}, opts);
    auto stats = torch::zeros({2 * (long)Co}, opts.dtype(torch::kFloat64));
    auto scale = torch::empty({Co}, opts), shift = torch::empty({Co}, opts);
    auto mean = torch::empty({Co}, opts), var = torch::empty({Co}, opts);
    auto stream = c10::cuda::getCurrentCUDAStream();
    const int tiles_x = (W + TILE - 1) / TILE, tiles_y = (H + TILE - 1) / TILE;
    dim3 grid(tiles_x * tiles_y, (Co + CO_T - 1) / CO_T, N);
    conv3x3_stats_kernel<<<grid, dim3(TILE, TILE), 0, stream>>>(xc.data_ptr<float>(), wc.data_ptr<float>(),
                                                                 y.data_ptr<float>(), stats.data_ptr<double>(),
                                                                 Ci, H, W, Co, tiles_x);
    finalize_kernel<<<(Co + 127) / 128, 128, 0, stream>>>(stats.data_ptr<double>(), gc.data_ptr<float>(),
                                                          bc.data_ptr<float>(), scale.data_ptr<float>(),
                                                          shift.data_ptr<float>(), mean.data_ptr<float>(),
                                                          var.data_ptr<float>(), Co, (double)N * H * W, eps);
    const long total = y.numel();
    const int blocks = (int)std::min<long>((total + 255) / 256, 132L * 32);
    scale_shift_relu_kernel<<<blocks, 256, 0, stream>>>(y.data_ptr<float>(), scale.data_ptr<float>(),
                                                        shift.data_ptr<float>(), total, Co, (long)H * W);
    return {y, mean, var};
}
"""
CPP = "std::vector<torch::Tensor> conv_bn_relu_train(torch::Tensor x, torch::Tensor w, torch::Tensor g, torch::Tensor b, double eps);"

ext = load_inline(name="real_conv_bn_relu_direct_conv_atomic_stats", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["conv_bn_relu_train"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn, conv = self.bn, self.conv
        if not bn.training:
            return torch.relu(bn(conv(x)))
        y, mean, var = ext.conv_bn_relu_train(x, conv.weight.detach(), bn.weight.detach(), bn.bias.detach(), bn.eps)
        with torch.no_grad():
            n = y.numel() // y.shape[1]
            bn.num_batches_tracked.add_(1)
            m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
            bn.running_mean.mul_(1 - m).add_(mean + conv.bias, alpha=m)
            bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        return y
