"""CUDA LayerNorm through load_inline: one block per row, shared-memory reductions for mean and variance.

task: cpu/layernorm
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

__global__ void layernorm_kernel(const float* x, const float* w, const float* b, float* y, int cols, float eps) {
    __shared__ float shm[32];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
    float mean = block_sum(s, shm) / cols;
    float ss = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float d = row[j] - mean; ss += d * d; }
    float rstd = rsqrtf(block_sum(ss, shm) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = (row[j] - mean) * rstd * w[j] + b[j];
}

torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "CUDA float32 expected");
    auto xc = x.contiguous();
    int cols = (int)xc.size(-1);
    long rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    layernorm_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), w.contiguous().data_ptr<float>(), b.contiguous().data_ptr<float>(),
        out.data_ptr<float>(), cols, (float)eps);
    return out;
}
"""
CPP = "torch::Tensor layernorm_fwd(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

ext = load_inline(name="corpus_cuda_layernorm", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["layernorm_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return ext.layernorm_fwd(x, self.ln.weight, self.ln.bias, self.ln.eps)
