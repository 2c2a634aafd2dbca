# cudal1 best for task level1/maxpool2d: speedup 3.161x, status ok, found at step 0
"""faster (hoped): CUDA 3x3/stride-2/pad-1 max pool with no index output, each thread reads two float4 plus one scalar from each of 3 input rows and writes one float4 of 4 outputs; a generic one-output-per-thread kernel takes other shapes."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

// NaN-propagating max, as PyTorch's pooling kernels behave
__device__ __forceinline__ float nmax(float a, float b) { return (b > a || isnan(b)) ? b : a; }

// k=3, s=2, p=1, H even, W % 8 == 0: output row oy reads input rows 2oy-1..2oy+1, output columns 4q..4q+3
// read input columns 8q-1..8q+7
__global__ void maxpool_k3s2p1_float4_kernel(const float* __restrict__ x, float4* __restrict__ y,
                                             long total4, int H, int W) {
    const int Ho = H / 2, Wq = W / 8;
    const float NEG = -INFINITY;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total4; i += (long)gridDim.x * blockDim.x) {
        const int q = i % Wq;
        const int oy = (i / Wq) % Ho;
        const long plane = i / ((long)Wq * Ho);
        const float* base = x + plane * H * (long)W;
        float c[9];
#pragma unroll
        for (int j = 0; j < 9; ++j) c[j] = NEG;
#pragma unroll
        for (int r = 0; r < 3; ++r) {
            const int iy = 2 * oy - 1 + r;
            if (iy < 0) continue;  // iy <= 2 * Ho - 1 = H - 1 always
            const float* row = base + (long)iy * W;
            const float4 a = reinterpret_cast<const float4*>(row)[2 * q];
            const float4 b = reinterpret_cast<const float4*>(row)[2 * q + 1];
            const float l = q > 0 ? row[8 * q - 1] : NEG;
            c[0] = nmax(c[0], l);
            c[1] = nmax(c[1], a.x); c[2] = nmax(c[2], a.y); c[3] = nmax(c[3], a.z); c[4] = nmax(c[4], a.w);
            c[5] = nmax(c[5], b.x); c[6] = nmax(c[6], b.y); c[7] = nmax(c[7], b.z); c[8] = nmax(c[8], b.w);
        }
        float4 o;
        o.x = nmax(nmax(c[0], c[1]), c[2]);
        o.y = nmax(nmax(c[2], c[3]), c[4]);
        o.z = nmax(nmax(c[4], c[5]), c[6]);
        o.w = nmax(nmax(c[6], c[7]), c[8]);
        y[i] = o;
    }
}

__global__ void maxpool_generic_kernel(const float* __restrict__ x, float* __restrict__ y, long total,
                                       int H, int W, int Ho, int Wo, int K, int S, int P) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        const int ox = i % Wo;
        const int oy = (i / Wo) % Ho;
        const long plane = i / ((long)Wo * Ho);
        const float* base = x + plane * H * (long)W;
        float m = -INFINITY;
        const int y0 = oy * S - P, x0 = ox * S - P;
        for (int ky = 0; ky < K; ++ky) {
            const int iy = y0 + ky;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < K; ++kx) {
                const int ix = x0 + kx;
                if (ix < 0 || ix >= W) continue;
                m = nmax(m, base[(long)iy * W + ix]);
            }
        }
        y[i] = m;
    }
}

static int grid_for(long work) { return (int)std::max<long>(1, std::min<long>((work + 255) / 256, 132L * 64)); }

torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(k > 0 && s > 0 && p >= 0 && 2 * p <= k, "bad pooling parameters");
    auto xc = x.contiguous();
    const long N = xc.size(0), C = xc.size(1);
    const int H = xc.size(2), W = xc.size(3);
    const int Ho = (H + 2 * p - k) / s + 1, Wo = (W + 2 * p - k) / s + 1;
    TORCH_CHECK(Ho > 0 && Wo > 0, "output would be empty");
    auto y = torch::empty({N, C, Ho, Wo}, xc.options());
    if (y.numel() == 0) return y;
    auto stream = c10::cuda::getCurrentCUDAStream();
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    const bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    if (k == 3 && s == 2 && p == 1 && H % 2 == 0 && W % 8 == 0 && aligned) {
        const long total4 = N * C * (long)Ho * (Wo / 4);
        maxpool_k3s2p1_float4_kernel<<<grid_for(total4), 256, 0, stream>>>(src, reinterpret_cast<float4*>(dst),
                                                                           total4, H, W);
    } else {
        const long total = y.numel();
        maxpool_generic_kernel<<<grid_for(total), 256, 0, stream>>>(src, dst, total, H, W, Ho, Wo, k, s, p);
    }
    return y;
}
"""
CPP = "torch::Tensor maxpool2d(torch::Tensor x, int64_t k, int64_t s, int64_t p);"

ext = load_inline(name="real_maxpool2d_float4_k3s2", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["maxpool2d"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        return ext.maxpool2d(x, self.k, self.s, self.p)

