"""slower: CUDA SGEMM with 32x32 shared-memory tiles, one output per thread (1024-thread blocks); far from cuBLAS."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

#define TILE 32

// C (M x N) = A (M x K) @ B (K x N), all row-major; block (TILE, TILE) owns one TILE x TILE tile of C
__global__ void sgemm_tile32_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                    int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long row = (long)blockIdx.y * TILE + ty;
    const long col = (long)blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(long)kb * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
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
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    TORCH_CHECK(grid.y <= 65535u, "too many row tiles for gridDim.y");
    sgemm_tile32_kernel<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
    return c;
}
"""
CPP = "torch::Tensor sgemm(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="real_matmul_square_slower_smem_tile32", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sgemm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.sgemm(A, B)
