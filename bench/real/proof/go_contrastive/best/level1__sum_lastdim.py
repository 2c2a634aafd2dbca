# cudal1 best for task level1/sum_lastdim: speedup 1.066x, status ok, found at step 0
"""faster (hoped): CUDA row sums, one 256-thread block per row, float4 loads, warp shuffles, then one warp over 8 partials."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// VEC: rows start 16-byte aligned (cols % 4 == 0 and an aligned base), so each row is cols / 4 float4s
template <bool VEC>
__global__ void sum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, long cols) {
    const float* xr = x + blockIdx.x * cols;
    float acc = 0.f;
    if (VEC) {
        const float4* xr4 = reinterpret_cast<const float4*>(xr);
        for (long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 v = xr4[j];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (long j = threadIdx.x; j < cols; j += blockDim.x) acc += xr[j];
    }
    __shared__ float partial[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    acc = warp_sum(acc);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < blockDim.x / 32 ? partial[lane] : 0.f;
        acc = warp_sum(acc);
        if (lane == 0) y[blockIdx.x] = acc;
    }
}

torch::Tensor sum_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto sizes = xc.sizes().vec();
    long cols = sizes.back();
    sizes.pop_back();
    auto y = torch::zeros(sizes, xc.options());  // zeros: an empty last dim sums to 0
    long rows = y.numel();
    if (rows == 0 || cols == 0) return y;
    const float* src = xc.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    bool vec = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
    if (vec)
        sum_rows_kernel<true><<<(unsigned)rows, 256, 0, stream>>>(src, y.data_ptr<float>(), cols);
    else
        sum_rows_kernel<false><<<(unsigned)rows, 256, 0, stream>>>(src, y.data_ptr<float>(), cols);
    return y;
}
"""
CPP = "torch::Tensor sum_lastdim(torch::Tensor x);"

ext = load_inline(name="demo_cuda_sum_lastdim_faster_block_float4", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sum_lastdim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_lastdim(x)

