"""CUDA RMSNorm built lazily at the first forward: one block per row, a shared-memory sum of squares, then scale.

build pattern: load_inline at the first forward call (if self.ext is None: self.ext = load_inline(...))

task: level1/rmsnorm_wide
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__device__ float block_sum(float v, float* shm) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = threadIdx.x < nwarps ? shm[threadIdx.x] : 0.f;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) shm[0] = v;
    __syncthreads();
    float total = shm[0];
    __syncthreads();
    return total;
}

__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int cols, float eps) {
    __shared__ float shm[32];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float ss = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) ss += row[j] * row[j];
    float scale = rsqrtf(block_sum(ss, shm) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = row[j] * scale * w[j];
}

torch::Tensor rmsnorm_fwd(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 expected");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    int cols = (int)xc.size(-1);
    long rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    rmsnorm_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), out.data_ptr<float>(), cols, (float)eps);
    return out;
}
"""
CPP = "torch::Tensor rmsnorm_fwd(torch::Tensor x, torch::Tensor w, double eps);"


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)
        self.ext = None  # built on first use, so constructing the model costs nothing

    def forward(self, x):
        if self.ext is None:
            self.ext = load_inline(name="corpus_cuda_rmsnorm_lazy", cpp_sources=CPP, cuda_sources=CUDA,
                                   functions=["rmsnorm_fwd"], verbose=False)
        return self.ext.rmsnorm_fwd(x, self.weight, self.eps)
