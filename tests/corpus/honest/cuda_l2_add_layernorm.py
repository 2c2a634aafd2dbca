"""CUDA fused residual add + LayerNorm: one block per row, h = x + residual kept in shared memory, two-pass statistics.

x and residual are read once (eager writes x + residual to memory and reads it back); the row's mean comes first, then
the centred sum of squares from shared memory (two passes, as accurate as PyTorch's Welford), then the affine write.
Block sums: a __shfl_xor_sync tree per warp, then one warp over the warp sums. Built with load_inline and launched on
the current stream; rows of up to 12288 floats fit the 48 KiB of shared memory a block gets without opting in.

task: level2/add_layernorm
device: cuda
expect: ok
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float v, float* red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)(blockDim.x / 32) ? red[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        if (lane == 0) red[32] = w;
    }
    __syncthreads();
    float total = red[32];
    __syncthreads();  // red is reused by the next call
    return total;
}

__global__ void add_layernorm_kernel(const float* __restrict__ x, const float* __restrict__ r,
                                     const float* __restrict__ weight, const float* __restrict__ bias,
                                     float* __restrict__ y, int D, float eps) {
    extern __shared__ float h[];
    __shared__ float red[33];
    long base = (long)blockIdx.x * D;
    float s = 0.f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) {
        float v = x[base + j] + r[base + j];
        h[j] = v;  // each thread reads back only the entries it wrote
        s += v;
    }
    float mean = block_sum(s, red) / D;
    float q = 0.f;
    for (int j = threadIdx.x; j < D; j += blockDim.x) {
        float d = h[j] - mean;
        q += d * d;
    }
    float inv = rsqrtf(block_sum(q, red) / D + eps);
    for (int j = threadIdx.x; j < D; j += blockDim.x) y[base + j] = (h[j] - mean) * inv * weight[j] + bias[j];
}

torch::Tensor add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    TORCH_CHECK(r.sizes() == x.sizes() && r.scalar_type() == torch::kFloat32, "residual must match x");
    auto xc = x.contiguous(), rc = r.contiguous(), wc = weight.contiguous(), bc = bias.contiguous();
    long D = xc.size(-1);
    TORCH_CHECK(D > 0 && D <= 12288 && wc.numel() == D && bc.numel() == D, "last dim must be 1..12288, = weight size");
    auto y = torch::empty_like(xc);
    long rows = xc.numel() / D;
    if (rows == 0) return y;
    add_layernorm_kernel<<<(unsigned)rows, 256, D * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), rc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(),
        (int)D, (float)eps);
    return y;
}
"""
CPP = "torch::Tensor add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor weight, torch::Tensor bias, double eps);"

ext = load_inline(name="corpus_cuda_add_layernorm", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["add_layernorm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)  # the reference's parameters and initialisation, in its order
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x, residual):
        return ext.add_layernorm(x, residual, self.ln.weight, self.ln.bias, self.ln.eps)
