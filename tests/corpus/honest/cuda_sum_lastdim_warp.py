"""CUDA row sums with one warp per row: lanes stride the row (coalesced loads), then a __shfl_down_sync tree.

No shared memory and no __syncthreads: each warp owns a whole row, its 32 lanes read consecutive floats, keep one
partial sum each, and five shuffle steps add the partials; lane 0 writes the row's sum. Built with load_inline and
launched on the current stream.

task: level1/sum_lastdim
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

// rows x cols contiguous; blockDim.x is a multiple of 32, so a warp's lanes share one row index and return together.
__global__ void sum_lastdim_kernel(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    long row = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float acc = 0.f;
    for (long j = lane; j < cols; j += 32) acc += xr[j];
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) y[row] = acc;
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
    const int threads = 256;  // 8 rows per block
    long blocks = (rows * 32 + threads - 1) / threads;
    sum_lastdim_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""
CPP = "torch::Tensor sum_lastdim(torch::Tensor x);"

ext = load_inline(name="corpus_cuda_sum_lastdim_warp", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sum_lastdim"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_lastdim(x)
