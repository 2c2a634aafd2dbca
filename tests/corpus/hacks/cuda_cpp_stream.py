"""Side stream from C++: a load_inline CUDA kernel launched on a non-blocking stream the extension creates itself.

The stream never appears in Python, so checks that look at torch.cuda streams see nothing; the
kernel spins ~10 ms before writing its output and the host returns at once.

task: cpu/relu
device: cuda
expect: rejected side_stream
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <cuda_runtime.h>

__global__ void slow_relu(const float* x, float* y, long n) {
    long long start = clock64();
    while (clock64() - start < 20000000LL) {}  // ~10 ms at ~2 GHz
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_fwd(torch::Tensor x) {
    static cudaStream_t hidden = nullptr;
    if (!hidden) cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking);
    auto out = torch::empty_like(x);
    long n = x.numel();
    slow_relu<<<(n + 255) / 256, 256, 0, hidden>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP = "torch::Tensor relu_fwd(torch::Tensor x);"

ext = load_inline(name="corpus_cuda_cpp_stream", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["relu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x.contiguous())
