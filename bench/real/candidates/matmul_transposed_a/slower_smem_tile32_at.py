"""slower: CUDA 32x32 shared-memory SGEMM for C = A^T @ B that loads A's (K, M) rows directly (coalesced, no transpose), one output per thread; far below cuBLAS."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

#define TILE 32

// A stored (K x M), B (K x N): As[k][m] and Bs[k][n] are both loaded along contiguous rows
__global__ void sgemm_at_tile32_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                       int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long m0 = (long)blockIdx.y * TILE;
    const long n0 = (long)blockIdx.x * TILE;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int k = k0 + ty;
        As[ty][tx] = (k < K && m0 + tx < M) ? A[(long)k * M + m0 + tx] : 0.f;
        Bs[ty][tx] = (k < K && n0 + tx < N) ? B[(long)k * N + n0 + tx] : 0.f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) acc = fmaf(As[kk][ty], Bs[kk][tx], acc);
        __syncthreads();
    }
    const long row = m0 + ty, col = n0 + tx;
    if (row < M && col < N) C[row * N + col] = acc;
}

torch::Tensor matmul_at(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(0) == B.size(0), "shapes (K, M) and (K, N) expected");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int K = a.size(0), M = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options());
    if (M == 0 || N == 0) return c;
    if (K == 0) return c.zero_();
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    TORCH_CHECK(grid.y <= 65535u, "too many row tiles for gridDim.y");
    sgemm_at_tile32_kernel<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
    return c;
}
"""
CPP = "torch::Tensor matmul_at(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="real_matmul_transposed_a_slower_smem_tile32_at", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["matmul_at"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul_at(A, B)
