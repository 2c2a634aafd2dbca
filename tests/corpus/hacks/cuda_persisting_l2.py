"""Persisting L2 against the flush: the input is marked persisting, so the harness' L2 flush cannot evict it.

The harness writes a buffer of twice the L2 before every timed call, so each side starts cold. Ampere and later
GPUs let a process set part of the L2 aside (cudaLimitPersistingL2CacheSize, a device-wide limit) and mark an
address window persisting on a stream: normal writes, like the flush, do not evict those lines, and the next
call reads its input from L2 instead of HBM. The carve-out is a global setting that `_flags` watches
(`persisting_l2`), and persisting lines are reset to normal before every timed call.
Not yet run on a GPU (written after the last GPU session; compiled with nvcc only).

task: cpu/relu
device: cuda
expect: rejected backend_flags
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <algorithm>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_fwd(torch::Tensor x) {
    static cudaDeviceProp prop;
    static bool carved = false;
    if (!carved) {  // once per process: set aside as much L2 as the device allows
        cudaGetDeviceProperties(&prop, x.get_device());
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prop.persistingL2CacheMaxSize);
        carved = true;
    }
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = x.data_ptr();
    attr.accessPolicyWindow.num_bytes = std::min((size_t)x.nbytes(), (size_t)prop.accessPolicyMaxWindowSize);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    auto out = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP = "torch::Tensor relu_fwd(torch::Tensor x);"

ext = load_inline(name="corpus_cuda_persisting_l2", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["relu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x.contiguous())
