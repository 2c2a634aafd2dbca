"""CUDA log-softmax from two extensions: per-row log-sum-exp built at import, the subtraction built in __init__.

build pattern: two different load_inline extensions in one candidate, one at module level and one in __init__,
both called in forward

task: level1/log_softmax_wide
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

LSE_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ float block_reduce(float v, float* shm, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_down_sync(0xffffffff, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = threadIdx.x < nwarps ? shm[threadIdx.x] : (is_max ? -INFINITY : 0.f);
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_down_sync(0xffffffff, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    if (threadIdx.x == 0) shm[0] = v;
    __syncthreads();
    float total = shm[0];
    __syncthreads();
    return total;
}

// lse[r] = max_j x[r, j] + log(sum_j exp(x[r, j] - max)): one block per row
__global__ void row_lse_kernel(const float* x, float* lse, int cols) {
    __shared__ float shm[32];
    const float* row = x + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_reduce(m, shm, true);
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j] - m);
    s = block_reduce(s, shm, false);
    if (threadIdx.x == 0) lse[blockIdx.x] = m + logf(s);
}

torch::Tensor row_lse(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "2-D CUDA float32 expected");
    auto xc = x.contiguous();
    auto lse = torch::empty({xc.size(0)}, xc.options());
    row_lse_kernel<<<xc.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), lse.data_ptr<float>(), (int)xc.size(1));
    return lse;
}
"""
LSE_CPP = "torch::Tensor row_lse(torch::Tensor x);"

SUB_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

// y[r, j] = x[r, j] - lse[r]: one block per row, so each thread reads lse[r] once
__global__ void sub_row_kernel(const float* x, const float* lse, float* y, int cols) {
    const long base = (long)blockIdx.x * cols;
    const float v = lse[blockIdx.x];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[base + j] = x[base + j] - v;
}

torch::Tensor sub_row(torch::Tensor x, torch::Tensor lse) {
    TORCH_CHECK(x.is_cuda() && lse.is_cuda() && x.dim() == 2 && lse.numel() == x.size(0), "shapes");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    sub_row_kernel<<<xc.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), lse.contiguous().data_ptr<float>(), out.data_ptr<float>(), (int)xc.size(1));
    return out;
}
"""
SUB_CPP = "torch::Tensor sub_row(torch::Tensor x, torch::Tensor lse);"

lse_ext = load_inline(name="corpus_cuda_two_ext_lse", cpp_sources=LSE_CPP, cuda_sources=LSE_CUDA,
                      functions=["row_lse"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub_ext = load_inline(name="corpus_cuda_two_ext_sub", cpp_sources=SUB_CPP, cuda_sources=SUB_CUDA,
                                   functions=["sub_row"], verbose=False)

    def forward(self, x):
        return self.sub_ext.sub_row(x, lse_ext.row_lse(x))
