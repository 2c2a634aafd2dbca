"""wrong: CUDA 32x32-tile SGEMM (4 rows per thread) that indexes B with row stride K instead of N: right for square inputs, wrong for this (8192x2048)@(2048x4096) product."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

#define TILE 32
#define ROWS 8  // block (TILE, ROWS); thread (tx, ty) owns rows ty + ROWS * i, i < TILE / ROWS

__global__ void sgemm_tile32_rows_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                         int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long row0 = (long)blockIdx.y * TILE;
    const long col = (long)blockIdx.x * TILE + tx;
    float acc[TILE / ROWS];
#pragma unroll
    for (int i = 0; i < TILE / ROWS; ++i) acc[i] = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
#pragma unroll
        for (int i = 0; i < TILE / ROWS; ++i) {
            const int r = ty + ROWS * i;
            const long gr = row0 + r;
            const int ka = k0 + tx, kb = k0 + r;
            As[r][tx] = (gr < M && ka < K) ? A[gr * K + ka] : 0.f;
            Bs[r][tx] = (kb < K && col < N) ? B[(long)kb * K + col] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float b = Bs[k][tx];
#pragma unroll
            for (int i = 0; i < TILE / ROWS; ++i) acc[i] = fmaf(As[ty + ROWS * i][k], b, acc[i]);
        }
        __syncthreads();
    }
    if (col < N) {
#pragma unroll
        for (int i = 0; i < TILE / ROWS; ++i) {
            const long gr = row0 + ty + ROWS * i;
            if (gr < M) C[gr * N + col] = acc[i];
        }
    }
}

torch::Tensor sgemm(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0), "shapes (M, K) and (K, N) expected");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options());
    if (M == 0 || N == 0) return c;
    if (K == 0) return c.zero_();
    dim3 block(TILE, ROWS);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    TORCH_CHECK(grid.y <= 65535u, "too many row tiles for gridDim.y");
    sgemm_tile32_rows_kernel<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
    return c;
}
"""
CPP = "torch::Tensor sgemm(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="real_matmul_rect_wrong_b_stride_k", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sgemm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.sgemm(A, B)
