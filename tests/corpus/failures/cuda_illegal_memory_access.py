"""Illegal memory access: a CUDA kernel that writes far past the end of its output.

After this the worker's CUDA context is unusable; the evaluator must report it and start a fresh
worker for the next candidate.

task: cpu/relu
device: cuda
expect: runtime_error cuda_error
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
__global__ void bad_relu(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i + (1L << 40)] = x[i] > 0.f ? x[i] : 0.f;  // 4 TiB past the buffer
}

torch::Tensor relu_fwd(torch::Tensor x) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    bad_relu<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP = "torch::Tensor relu_fwd(torch::Tensor x);"

ext = load_inline(name="corpus_cuda_illegal_access", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["relu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x.contiguous())
