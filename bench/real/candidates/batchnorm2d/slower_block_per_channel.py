"""slower: CUDA batch norm with one 1024-thread block per channel doing three passes (sum for the mean, sum of squared deviations, then normalise and write); exact two-pass variance, but only 64 blocks for 132 SMs and the input read three times."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <vector>

#define THREADS 1024

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// block-wide double sum handed to every thread; safe to call repeatedly (leading barrier protects the buffer)
__device__ double block_sum_d(double v, double* buf) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum_d(v);
    __syncthreads();
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum_d(lane < THREADS / 32 ? buf[lane] : 0.0);
        if (lane == 0) buf[THREADS / 32] = v;
    }
    __syncthreads();
    return buf[THREADS / 32];
}

__global__ void __launch_bounds__(THREADS) bn_channel_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                                             const float* __restrict__ b, float* __restrict__ y,
                                                             float* __restrict__ mean_out, float* __restrict__ var_out,
                                                             long N, int C, long HW, float eps) {
    __shared__ double buf[THREADS / 32 + 1];
    const int c = blockIdx.x;
    const long count = N * HW;
    float s = 0.f;
    for (long n = 0; n < N; ++n) {
        const float* p = x + (n * C + c) * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) s += p[j];
    }
    const double mean = block_sum_d((double)s, buf) / (double)count;
    const float mf = (float)mean;
    float q = 0.f;
    for (long n = 0; n < N; ++n) {
        const float* p = x + (n * C + c) * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) {
            float d = p[j] - mf;
            q += d * d;
        }
    }
    const double var = block_sum_d((double)q, buf) / (double)count;
    const double sc = (double)w[c] / sqrt(var + (double)eps);
    const float g = (float)sc, h = (float)((double)b[c] - mean * sc);
    for (long n = 0; n < N; ++n) {
        const long base = (n * C + c) * HW;
        for (long j = threadIdx.x; j < HW; j += THREADS) y[base + j] = fmaf(x[base + j], g, h);
    }
    if (threadIdx.x == 0) {
        mean_out[c] = (float)mean;
        var_out[c] = (float)var;
    }
}

std::vector<torch::Tensor> bn_train(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(w.is_cuda() && b.is_cuda() && w.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "CUDA float32 affine expected");
    auto xc = x.contiguous();
    const long N = xc.size(0), C = xc.size(1), HW = xc.size(2) * xc.size(3);
    TORCH_CHECK(w.numel() == C && b.numel() == C, "affine size mismatch");
    TORCH_CHECK(N * HW > 0, "empty batch");
    auto y = torch::empty_like(xc);
    auto mean = torch::empty({C}, xc.options()), var = torch::empty({C}, xc.options());
    auto wc = w.contiguous(), bc = b.contiguous();
    bn_channel_kernel<<<(unsigned)C, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), mean.data_ptr<float>(),
        var.data_ptr<float>(), N, (int)C, HW, (float)eps);
    return {y, mean, var};
}
"""
CPP = "std::vector<torch::Tensor> bn_train(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

ext = load_inline(name="real_batchnorm2d_block_per_channel", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bn_train"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn = self.bn
        if not bn.training:
            scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
            shift = bn.bias - bn.running_mean * scale
            return x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)
        y, mean, var = ext.bn_train(x, bn.weight.detach(), bn.bias.detach(), bn.eps)
        with torch.no_grad():
            n = x.numel() // x.shape[1]
            bn.num_batches_tracked.add_(1)
            m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
            bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
            bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        return y
