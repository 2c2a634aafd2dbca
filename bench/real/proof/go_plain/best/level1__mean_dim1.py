# cudal1 best for task level1/mean_dim1: speedup 1.076x, status ok, found at step 0
"""faster (hoped): CUDA mean over a middle dim, float4 columns per thread, 8 thread rows splitting the reduced dim, shared-memory combine."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define COLS 128  // threads along the kept inner dim (float4 or float each)
#define SPLIT 8   // threads along the reduced dim; 128 x 8 = 1024 threads per block

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float4 add(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ float divide(float a, float d) { return a / d; }
__device__ __forceinline__ float4 divide(float4 a, float d) { return make_float4(a.x / d, a.y / d, a.z / d, a.w / d); }

// x viewed as (outer, R, inner) with inner counted in V units; block (COLS, SPLIT) owns COLS columns of one outer index
template <typename V>
__global__ void mean_mid_kernel(const V* __restrict__ x, V* __restrict__ y, long R, long inner) {
    __shared__ V part[SPLIT][COLS];
    long o = blockIdx.x;
    long c = blockIdx.y * (long)COLS + threadIdx.x;
    V acc{};
    if (c < inner)
        for (long r = threadIdx.y; r < R; r += SPLIT) acc = add(acc, x[(o * R + r) * inner + c]);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < inner) {
        for (int k = 1; k < SPLIT; ++k) acc = add(acc, part[k][threadIdx.x]);
        y[o * inner + c] = divide(acc, (float)R);
    }
}

torch::Tensor mean_dim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    if (dim < 0) dim += x.dim();
    auto xc = x.contiguous();
    auto sizes = xc.sizes().vec();
    long outer = 1, inner = 1, R = sizes[dim];
    for (long d = 0; d < dim; ++d) outer *= sizes[d];
    for (long d = dim + 1; d < (long)sizes.size(); ++d) inner *= sizes[d];
    sizes.erase(sizes.begin() + dim);
    auto y = torch::empty(sizes, xc.options());
    if (outer == 0 || inner == 0) return y;
    const float* src = xc.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    dim3 block(COLS, SPLIT);
    bool vec = inner % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    if (vec) {
        long inner4 = inner / 4;
        dim3 grid((unsigned)outer, (unsigned)((inner4 + COLS - 1) / COLS));
        mean_mid_kernel<float4><<<grid, block, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), R, inner4);
    } else {
        dim3 grid((unsigned)outer, (unsigned)((inner + COLS - 1) / COLS));
        mean_mid_kernel<float><<<grid, block, 0, stream>>>(src, dst, R, inner);
    }
    return y;
}
"""
CPP = "torch::Tensor mean_dim(torch::Tensor x, int64_t dim);"

ext = load_inline(name="demo_cuda_mean_dim1_faster_split_rows_float4", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mean_dim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_dim(x, self.dim)

