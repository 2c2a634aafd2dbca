"""slower: CUDA MSE in a single 1024-thread block: one SM streams all 512 MiB while the other SMs sit idle."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

__global__ void mse_one_block_kernel(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ out,
                                     long n) {
    double acc = 0.0;  // each thread adds n / 1024 squares (65536 here): double keeps that long sum exact enough
    for (long i = threadIdx.x; i < n; i += blockDim.x) {
        float d = p[i] - t[i];
        acc += d * d;
    }
    __shared__ double partial[1024];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {  // blockDim.x is a power of two
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = (float)(partial[0] / (double)n);
}

torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.is_cuda() && predictions.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(targets.is_cuda() && targets.scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(predictions.sizes() == targets.sizes(), "predictions and targets must have the same shape");
    auto p = predictions.contiguous();
    auto t = targets.contiguous();
    auto out = torch::empty({}, p.options());  // 0-dim; n == 0 gives 0 / 0 = NaN, like torch.mean
    mse_one_block_kernel<<<1, 1024, 0, c10::cuda::getCurrentCUDAStream()>>>(
        p.data_ptr<float>(), t.data_ptr<float>(), out.data_ptr<float>(), p.numel());
    return out;
}
"""
CPP = "torch::Tensor mse_loss(torch::Tensor predictions, torch::Tensor targets);"

ext = load_inline(name="demo_cuda_mse_loss_slower_single_block", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mse_loss"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.mse_loss(predictions, targets)
