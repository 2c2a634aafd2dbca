# cudal1 best for task level2/conv_bn_relu: speedup 1.881x, status ok, found at step 0
"""faster (hoped): cuDNN conv without bias (training-mode BN cancels it), then CUDA float4 partial statistics over many blocks per channel (pivot-shifted, combined in double), a per-channel finalize, and one fused scale-shift-ReLU pass written in place over the conv output."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <vector>

#define THREADS 256
#define STAT_ITEMS 4096
#define APPLY_PER_THREAD 4

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// grid (N * splits, C); slice `s` of plane (n, c); sums of (v - pivot) and its square, block total in double
template <bool VEC>
__global__ void __launch_bounds__(THREADS) stats_partial_kernel(const float* __restrict__ x, double2* __restrict__ part,
                                                                int C, long HW, int splits) {
    __shared__ double sa[THREADS / 32], sb[THREADS / 32];
    const int c = blockIdx.y;
    const long n = blockIdx.x / splits;
    const int s = blockIdx.x % splits;
    const float pivot = x[(long)c * HW];
    const float* plane = x + (n * C + c) * HW;
    float sum = 0.f, sq = 0.f;
    if (VEC) {
        const float4* p4 = reinterpret_cast<const float4*>(plane);
        const long len = HW / 4, lo = (long)s * STAT_ITEMS, hi = min(len, lo + STAT_ITEMS);
        for (long j = lo + threadIdx.x; j < hi; j += THREADS) {
            float4 v = p4[j];
            float a = v.x - pivot, b = v.y - pivot, cc = v.z - pivot, d = v.w - pivot;
            sum += (a + b) + (cc + d);
            sq += (a * a + b * b) + (cc * cc + d * d);
        }
    } else {
        const long lo = (long)s * STAT_ITEMS, hi = min(HW, lo + STAT_ITEMS);
        for (long j = lo + threadIdx.x; j < hi; j += THREADS) {
            float a = plane[j] - pivot;
            sum += a;
            sq += a * a;
        }
    }
    double ds = warp_sum_d((double)sum), dq = warp_sum_d((double)sq);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sa[warp] = ds; sb[warp] = dq; }
    __syncthreads();
    if (warp == 0) {
        ds = warp_sum_d(lane < THREADS / 32 ? sa[lane] : 0.0);
        dq = warp_sum_d(lane < THREADS / 32 ? sb[lane] : 0.0);
        if (lane == 0) part[(long)c * gridDim.x + blockIdx.x] = make_double2(ds, dq);
    }
}

__global__ void finalize_kernel(const float* __restrict__ x, const double2* __restrict__ part, int nparts,
                                const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ scale,
                                float* __restrict__ shift, float* __restrict__ mean_out, float* __restrict__ var_out,
                                int C, long HW, double count, double eps) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double s = 0.0, q = 0.0;
    for (int i = 0; i < nparts; ++i) {
        double2 p = part[(long)c * nparts + i];
        s += p.x;
        q += p.y;
    }
    const double dm = s / count;
    const double var = fmax(q / count - dm * dm, 0.0);
    const double mean = (double)x[(long)c * HW] + dm;
    const double sc = (double)w[c] / sqrt(var + eps);
    scale[c] = (float)sc;
    shift[c] = (float)((double)b[c] - mean * sc);
    mean_out[c] = (float)mean;
    var_out[c] = (float)var;
}

__device__ __forceinline__ float relu_fma(float v, float g, float h) { return fmaxf(fmaf(v, g, h), 0.f); }

// grid (N * C planes, chunks), in place: y = max(y * scale[c] + shift[c], 0)
template <bool VEC>
__global__ void __launch_bounds__(THREADS) scale_shift_relu_kernel(float* __restrict__ y, const float* __restrict__ scale,
                                                                   const float* __restrict__ shift, int C, long HW) {
    const long plane = blockIdx.x;
    const int c = plane % C;
    const float g = scale[c], h = shift[c];
    const long start = (long)blockIdx.y * THREADS * APPLY_PER_THREAD + threadIdx.x;
    if (VEC) {
        float4* y4 = reinterpret_cast<float4*>(y + plane * HW);
        const long len = HW / 4;
#pragma unroll
        for (int k = 0; k < APPLY_PER_THREAD; ++k) {
            long j = start + (long)k * THREADS;
            if (j < len) {
                float4 v = y4[j];
                y4[j] = make_float4(relu_fma(v.x, g, h), relu_fma(v.y, g, h), relu_fma(v.z, g, h), relu_fma(v.w, g, h));
            }
        }
    } else {
        float* yp = y + plane * HW;
#pragma unroll
        for (int k = 0; k < APPLY_PER_THREAD; ++k) {
            long j = start + (long)k * THREADS;
            if (j < HW) yp[j] = relu_fma(yp[j], g, h);
        }
    }
}

// y: the bias-free conv output (N, C, H, W), overwritten with relu(bn(y)); returns {y, batch mean, biased var}
std::vector<torch::Tensor> bn_relu_train_(torch::Tensor y, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.dim() == 4, "CUDA float32 NCHW tensor expected");
    TORCH_CHECK(y.is_contiguous(), "contiguous conv output expected");
    TORCH_CHECK(w.is_cuda() && b.is_cuda() && w.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "CUDA float32 affine expected");
    const long N = y.size(0), C = y.size(1), HW = y.size(2) * y.size(3);
    TORCH_CHECK(w.numel() == C && b.numel() == C, "affine size mismatch");
    TORCH_CHECK(N * HW > 0 && C <= 65535, "unsupported shape");
    auto opts = y.options();
    auto scale = torch::empty({C}, opts), shift = torch::empty({C}, opts);
    auto mean = torch::empty({C}, opts), var = torch::empty({C}, opts);
    float* yp = y.data_ptr<float>();
    const bool vec = HW % 4 == 0 && reinterpret_cast<std::uintptr_t>(yp) % 16 == 0;
    const long len = vec ? HW / 4 : HW;
    const int splits = (int)((len + STAT_ITEMS - 1) / STAT_ITEMS);
    const long nparts = N * splits;
    TORCH_CHECK(nparts < (1L << 31), "batch too large");
    auto part = torch::empty({C * nparts * 2}, opts.dtype(torch::kFloat64));
    double2* pp = reinterpret_cast<double2*>(part.data_ptr<double>());
    auto stream = c10::cuda::getCurrentCUDAStream();
    dim3 sgrid((unsigned)nparts, (unsigned)C);
    if (vec) stats_partial_kernel<true><<<sgrid, THREADS, 0, stream>>>(yp, pp, C, HW, splits);
    else stats_partial_kernel<false><<<sgrid, THREADS, 0, stream>>>(yp, pp, C, HW, splits);
    auto wc = w.contiguous(), bc = b.contiguous();
    finalize_kernel<<<(unsigned)((C + 127) / 128), 128, 0, stream>>>(
        yp, pp, (int)nparts, wc.data_ptr<float>(), bc.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(),
        mean.data_ptr<float>(), var.data_ptr<float>(), C, HW, (double)(N * HW), eps);
    const long chunks = (len + THREADS * APPLY_PER_THREAD - 1) / (THREADS * APPLY_PER_THREAD);
    TORCH_CHECK(chunks <= 65535, "plane too large");
    dim3 agrid((unsigned)(N * C), (unsigned)chunks);
    if (vec) scale_shift_relu_kernel<true><<<agrid, THREADS, 0, stream>>>(yp, scale.data_ptr<float>(), shift.data_ptr<float>(), C, HW);
    else scale_shift_relu_kernel<false><<<agrid, THREADS, 0, stream>>>(yp, scale.data_ptr<float>(), shift.data_ptr<float>(), C, HW);
    return {y, mean, var};
}
"""
CPP = "std::vector<torch::Tensor> bn_relu_train_(torch::Tensor y, torch::Tensor w, torch::Tensor b, double eps);"

ext = load_inline(name="real_conv_bn_relu_cudnn_fused_bn_relu", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bn_relu_train_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn, conv = self.bn, self.conv
        if not bn.training:
            return torch.relu(bn(conv(x)))
        y = F.conv2d(x, conv.weight, None, conv.stride, conv.padding).contiguous()
        y, mean, var = ext.bn_relu_train_(y, bn.weight.detach(), bn.bias.detach(), bn.eps)
        with torch.no_grad():
            n = y.numel() // y.shape[1]
            bn.num_batches_tracked.add_(1)
            m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
            bn.running_mean.mul_(1 - m).add_(mean + conv.bias, alpha=m)
            bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        return y

