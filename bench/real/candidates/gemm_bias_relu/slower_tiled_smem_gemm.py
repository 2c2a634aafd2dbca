"""slower: CUDA, a hand-written 64x64-tile shared-memory fp32 GEMM (4x4 outputs per thread) with bias and ReLU in its epilogue; one kernel, but far below cuBLAS."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

#define BM 64
#define BN 64
#define BK 16
#define PAD 4  // keeps each smem row 16-byte aligned for float4 reads

// y[m, n] = relu(sum_k x[m, k] * w[n, k] + b[n]); x (M, K), w (N, K) row-major; 256 threads, 4x4 outputs each
__global__ void __launch_bounds__(256) gemm_bias_relu_tiled(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ b, float* __restrict__ y, long M, long N, long K) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN + PAD];
    int t = threadIdx.x;
    int tx = t % 16, ty = t / 16;
    long m0 = (long)blockIdx.y * BM, n0 = (long)blockIdx.x * BN;
    float acc[4][4] = {};
    for (long k0 = 0; k0 < K; k0 += BK) {
        // each thread loads 4 elements of each tile; consecutive threads read consecutive k (16 per row)
        for (int l = 0; l < 4; ++l) {
            int idx = t + l * 256;
            int r = idx / BK, kk = idx % BK;
            long gk = k0 + kk;
            long gm = m0 + r, gn = n0 + r;
            As[kk][r] = (gm < M && gk < K) ? x[gm * K + gk] : 0.f;
            Bs[kk][r] = (gn < N && gk < K) ? w[gn * K + gk] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float4 a = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
            float4 c = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
            float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) {
        long gm = m0 + ty * 4 + i;
        if (gm >= M) break;
        for (int j = 0; j < 4; ++j) {
            long gn = n0 + tx * 4 + j;
            if (gn < N) {
                float v = acc[i][j] + b[gn];
                y[gm * N + gn] = v > 0.f ? v : 0.f;
            }
        }
    }
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && b.numel() == w.size(0), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    long M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    if (M == 0 || N == 0) return y;
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
    gemm_bias_relu_tiled<<<grid, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), M, N, K);
    return y;
}
"""
CPP = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="real_gemm_bias_relu_slower_tiled_smem_gemm", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["linear_relu"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x, self.linear.weight, self.linear.bias)
