"""slower: CUDA mean with one thread per output, threads ordered batch-fastest, so a warp's loads sit 2 MiB apart."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

// thread t owns output (o, c) with o = t % outer: neighbouring threads read different batches (no coalescing)
__global__ void mean_mid_kernel(const float* __restrict__ x, float* __restrict__ y, long outer, long R, long inner) {
    long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    long o = t % outer, c = t / outer;
    float acc = 0.f;
    for (long r = 0; r < R; ++r) acc += x[(o * R + r) * inner + c];
    y[o * inner + c] = acc / (float)R;
}

torch::Tensor mean_dim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 1, "CUDA float32 tensor expected");
    if (dim < 0) dim += x.dim();
    auto xc = x.contiguous();
    auto sizes = xc.sizes().vec();
    long outer = 1, inner = 1, R = sizes[dim];
    for (long d = 0; d < dim; ++d) outer *= sizes[d];
    for (long d = dim + 1; d < (long)sizes.size(); ++d) inner *= sizes[d];
    sizes.erase(sizes.begin() + dim);
    auto y = torch::empty(sizes, xc.options());
    long n = outer * inner;
    if (n == 0) return y;
    mean_mid_kernel<<<(unsigned)((n + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), outer, R, inner);
    return y;
}
"""
CPP = "torch::Tensor mean_dim(torch::Tensor x, int64_t dim);"

ext = load_inline(name="demo_cuda_mean_dim1_slower_thread_per_output", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["mean_dim"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.mean_dim(x, self.dim)
