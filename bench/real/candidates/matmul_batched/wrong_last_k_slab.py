"""wrong: CUDA batched 64x64 register-tiled SGEMM whose k loop runs while k0 < K - BK: the last 16-wide slab of K is never accumulated."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define BM 64
#define BN 64
#define BK 16
#define THREADS 256  // 16 x 16, each thread 4 x 4 outputs

// per batch: C (M x N) = A (M x K) @ B (K x N), row-major. Thread (tx, ty) owns rows ty + 16 i and cols tx + 16 j of the tile.
// VEC: K % 4 == 0, N % 4 == 0 and 16-byte aligned pointers (float4 loads where all four elements are in range).
template <bool VEC>
__global__ void __launch_bounds__(THREADS) bmm_64x64_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int N, int K) {
    const long batch = blockIdx.z;
    A += batch * M * K;
    B += batch * K * N;
    C += batch * M * N;
    __shared__ float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    const long bm = (long)blockIdx.y * BM, bn = (long)blockIdx.x * BN;
    const int a_row = tid / 4, a_col = (tid % 4) * 4;    // 64 rows x 16 k
    const int b_row = tid / 16, b_col = (tid % 16) * 4;  // 16 k x 64 cols

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;

    for (int k0 = 0; k0 < K - BK; k0 += BK) {
        const long gr = bm + a_row;
        const int ga = k0 + a_col;
        if (VEC && gr < M && ga + 3 < K) {
            float4 v = *reinterpret_cast<const float4*>(A + gr * K + ga);
            As[a_col + 0][a_row] = v.x; As[a_col + 1][a_row] = v.y;
            As[a_col + 2][a_row] = v.z; As[a_col + 3][a_row] = v.w;
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) As[a_col + i][a_row] = (gr < M && ga + i < K) ? A[gr * K + ga + i] : 0.f;
        }
        const int gk = k0 + b_row;
        const long gc = bn + b_col;
        if (VEC && gk < K && gc + 3 < N) {
            *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = *reinterpret_cast<const float4*>(B + (long)gk * N + gc);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) Bs[b_row][b_col + j] = (gk < K && gc + j < N) ? B[(long)gk * N + gc + j] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[4], rb[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) ra[i] = As[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) rb[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const long r = bm + ty + 16 * i;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long c = bn + tx + 16 * j;
            if (c < N) C[r * N + c] = acc[i][j];
        }
    }
}

static bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

torch::Tensor batched_sgemm(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(A.scalar_type() == torch::kFloat32 && B.scalar_type() == torch::kFloat32, "float32 expected");
    TORCH_CHECK(A.dim() == 3 && B.dim() == 3 && A.size(0) == B.size(0) && A.size(2) == B.size(1),
                "shapes (b, M, K) and (b, K, N) expected");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const long batch = a.size(0);
    const int M = a.size(1), K = a.size(2), N = b.size(2);
    TORCH_CHECK(batch <= 65535, "batch must fit gridDim.z");
    auto c = torch::empty({batch, M, N}, a.options());
    if (batch == 0 || M == 0 || N == 0) return c;
    if (K == 0) return c.zero_();
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, (unsigned)batch);
    TORCH_CHECK(grid.y <= 65535u, "too many row tiles for gridDim.y");
    auto stream = c10::cuda::getCurrentCUDAStream();
    if (K % 4 == 0 && N % 4 == 0 && aligned16(pa) && aligned16(pb))
        bmm_64x64_kernel<true><<<grid, THREADS, 0, stream>>>(pa, pb, c.data_ptr<float>(), M, N, K);
    else
        bmm_64x64_kernel<false><<<grid, THREADS, 0, stream>>>(pa, pb, c.data_ptr<float>(), M, N, K);
    return c;
}
"""
CPP = "torch::Tensor batched_sgemm(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="real_matmul_batched_wrong_last_k_slab", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["batched_sgemm"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.batched_sgemm(A, B)
