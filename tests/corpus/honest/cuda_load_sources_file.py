"""CUDA mean squared error through torch.utils.cpp_extension.load on a .cpp and a .cu file written at import time.

build pattern: load(name, sources=[cpp_path, cu_path]) on files written into a tempfile.mkdtemp() folder (a new path
in every process that imports the module): the .cpp declares the host function and holds PYBIND11_MODULE, the .cu
holds the kernels; per-block partial sums in double, then one block adds the partials

task: level1/mse_loss
device: cuda
expect: ok
"""
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CUDA = r"""
#include <torch/types.h>
#include <ATen/cuda/CUDAContext.h>

__device__ double block_sum(double v, double* shm) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x >> 5;
    v = threadIdx.x < nwarps ? shm[threadIdx.x] : 0.0;
    if (warp == 0) for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;  // the total, in thread 0
}

// partial[b] = sum over block b's grid-stride share of (p - t)^2; block 0 also takes the n % 4 tail
__global__ void sq_diff_partial(const float* p, const float* t, long n, double* partial) {
    __shared__ double shm[32];
    const long n4 = n / 4;
    const float4* p4 = (const float4*)p;
    const float4* t4 = (const float4*)t;
    float acc = 0.f;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 a = p4[i], b = t4[i];
        float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
        acc += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
    if (blockIdx.x == 0)
        for (long i = 4 * n4 + threadIdx.x; i < n; i += blockDim.x) { float d = p[i] - t[i]; acc += d * d; }
    double total = block_sum((double)acc, shm);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void mean_of_partials(const double* partial, int parts, long n, float* out) {
    __shared__ double shm[32];
    double s = 0.0;
    for (int i = threadIdx.x; i < parts; i += blockDim.x) s += partial[i];
    s = block_sum(s, shm);
    if (threadIdx.x == 0) out[0] = (float)(s / (double)n);
}

torch::Tensor mse_fwd(torch::Tensor pred, torch::Tensor target) {
    TORCH_CHECK(pred.is_cuda() && pred.scalar_type() == torch::kFloat32 && target.scalar_type() == torch::kFloat32,
                "CUDA float32 expected");
    TORCH_CHECK(pred.sizes() == target.sizes(), "shapes differ");
    auto pc = pred.contiguous();
    auto tc = target.contiguous();
    long n = pc.numel();
    int blocks = (int)std::max<long>(1, std::min<long>((n / 4 + 255) / 256, 1024));
    auto partial = torch::empty({blocks}, pc.options().dtype(torch::kFloat64));
    auto out = torch::empty({}, pc.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    sq_diff_partial<<<blocks, 256, 0, stream>>>(pc.data_ptr<float>(), tc.data_ptr<float>(), n,
                                                partial.data_ptr<double>());
    mean_of_partials<<<1, 1024, 0, stream>>>(partial.data_ptr<double>(), blocks, n, out.data_ptr<float>());
    return out;
}
"""
CPP = r"""
#include <torch/extension.h>

torch::Tensor mse_fwd(torch::Tensor pred, torch::Tensor target);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("mse_fwd", &mse_fwd, "mean of (pred - target)^2 over all elements");
}
"""

SRC_DIR = tempfile.mkdtemp(prefix="mse_src_")
SOURCES = [os.path.join(SRC_DIR, "mse.cpp"), os.path.join(SRC_DIR, "mse_kernel.cu")]
for path, text in zip(SOURCES, (CPP, CUDA)):
    with open(path, "w") as f:
        f.write(text)

ext = load(name="corpus_cuda_mse_load", sources=SOURCES, extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return ext.mse_fwd(predictions, targets)
