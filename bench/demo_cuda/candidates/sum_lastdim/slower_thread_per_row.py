"""slower: CUDA row sums with one thread per row: 8192 threads, and a warp's 32 loads land 64 KiB apart (no coalescing)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void sum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    long row = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float acc = 0.f;
    for (long j = 0; j < cols; ++j) acc += xr[j];
    y[row] = acc;
}

torch::Tensor sum_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    auto xc = x.contiguous();
    auto sizes = xc.sizes().vec();
    long cols = sizes.back();
    sizes.pop_back();
    auto y = torch::zeros(sizes, xc.options());
    long rows = y.numel();
    if (rows == 0 || cols == 0) return y;
    sum_rows_kernel<<<(unsigned)((rows + 127) / 128), 128, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""
CPP = "torch::Tensor sum_lastdim(torch::Tensor x);"

ext = load_inline(name="demo_cuda_sum_lastdim_slower_thread_per_row", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["sum_lastdim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.sum_lastdim(x)
