# cudal1 best for task level1/batchnorm2d: speedup 2.325x, status ok, found at step 0
"""faster (hoped): CUDA training-mode batch norm in three kernels: float4 partial sums (shifted by a per-channel pivot, combined in double) over many blocks per channel, a tiny finalize to per-channel scale/shift, and a float4 scale-and-shift pass; running statistics updated from the returned mean/var."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include <vector>

#define THREADS 256
#define STAT_ITEMS 4096   // float4 (or floats on the scalar path) per statistics block
#define APPLY_PER_THREAD 4

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// two block-wide double sums, result valid in thread 0
__device__ __forceinline__ void block_sum2(double& a, double& b) {
    __shared__ double sa[THREADS / 32], sb[THREADS / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    a = warp_sum_d(a);
    b = warp_sum_d(b);
    if (lane == 0) { sa[warp] = a; sb[warp] = b; }
    __syncthreads();
    if (warp == 0) {
        a = lane < THREADS / 32 ? sa[lane] : 0.0;
        b = lane < THREADS / 32 ? sb[lane] : 0.0;
        a = warp_sum_d(a);
        b = warp_sum_d(b);
    }
}

// grid (N * splits, C): block (n, part) of channel c sums (x - pivot) and (x - pivot)^2 over its slice of plane (n, c)
template <bool VEC>
__global__ void __launch_bounds__(THREADS) bn_partial_kernel(const float* __restrict__ x, double2* __restrict__ part,
                                                             int C, long HW, int splits) {
    const int c = blockIdx.y;
    const long n = blockIdx.x / splits;
    const int s = blockIdx.x % splits;
    const float pivot = x[(long)c * HW];  // sample 0's first value of channel c
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
    double ds = sum, dq = sq;
    block_sum2(ds, dq);
    if (threadIdx.x == 0) part[(long)c * gridDim.x + blockIdx.x] = make_double2(ds, dq);
}

// one thread per channel: batch mean / biased variance, then scale = w / sqrt(var + eps), shift = b - mean * scale
__global__ void bn_finalize_kernel(const float* __restrict__ x, const double2* __restrict__ part, int nparts,
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

// grid (N * C planes, chunks): y = x * scale[c] + shift[c]
template <bool VEC>
__global__ void __launch_bounds__(THREADS) bn_apply_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                                           const float* __restrict__ shift, float* __restrict__ y,
                                                           int C, long HW) {
    const long plane = blockIdx.x;
    const int c = plane % C;
    const float g = scale[c], h = shift[c];
    const long base = plane * HW;
    if (VEC) {
        const float4* x4 = reinterpret_cast<const float4*>(x + base);
        float4* y4 = reinterpret_cast<float4*>(y + base);
        const long len = HW / 4;
        const long start = (long)blockIdx.y * THREADS * APPLY_PER_THREAD + threadIdx.x;
#pragma unroll
        for (int k = 0; k < APPLY_PER_THREAD; ++k) {
            long j = start + (long)k * THREADS;
            if (j < len) {
                float4 v = x4[j];
                y4[j] = make_float4(fmaf(v.x, g, h), fmaf(v.y, g, h), fmaf(v.z, g, h), fmaf(v.w, g, h));
            }
        }
    } else {
        const long start = (long)blockIdx.y * THREADS * APPLY_PER_THREAD + threadIdx.x;
#pragma unroll
        for (int k = 0; k < APPLY_PER_THREAD; ++k) {
            long j = start + (long)k * THREADS;
            if (j < HW) y[base + j] = fmaf(x[base + j], g, h);
        }
    }
}

static void check_input(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
}

static void launch_apply(const torch::Tensor& xc, const torch::Tensor& scale, const torch::Tensor& shift, torch::Tensor& y,
                         bool vec) {
    const long N = xc.size(0), C = xc.size(1), HW = xc.size(2) * xc.size(3);
    const long len = vec ? HW / 4 : HW;
    const long chunks = (len + THREADS * APPLY_PER_THREAD - 1) / (THREADS * APPLY_PER_THREAD);
    TORCH_CHECK(chunks <= 65535, "plane too large");
    dim3 grid((unsigned)(N * C), (unsigned)chunks);
    auto stream = c10::cuda::getCurrentCUDAStream();
    if (vec)
        bn_apply_kernel<true><<<grid, THREADS, 0, stream>>>(xc.data_ptr<float>(), scale.data_ptr<float>(),
                                                            shift.data_ptr<float>(), y.data_ptr<float>(), C, HW);
    else
        bn_apply_kernel<false><<<grid, THREADS, 0, stream>>>(xc.data_ptr<float>(), scale.data_ptr<float>(),
                                                             shift.data_ptr<float>(), y.data_ptr<float>(), C, HW);
}

static bool is_vec(const torch::Tensor& xc, const torch::Tensor& y) {
    const long HW = xc.size(2) * xc.size(3);
    return HW % 4 == 0 && reinterpret_cast<std::uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(y.data_ptr<float>()) % 16 == 0;
}

// returns {y, batch mean, biased batch variance}
std::vector<torch::Tensor> bn_train(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    check_input(x);
    TORCH_CHECK(w.is_cuda() && b.is_cuda() && w.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "CUDA float32 affine expected");
    auto xc = x.contiguous();
    const long N = xc.size(0), C = xc.size(1), HW = xc.size(2) * xc.size(3);
    TORCH_CHECK(w.numel() == C && b.numel() == C, "affine size mismatch");
    TORCH_CHECK(N * HW > 0, "empty batch");
    TORCH_CHECK(C <= 65535, "too many channels");
    auto y = torch::empty_like(xc);
    auto opts = xc.options();
    auto scale = torch::empty({C}, opts), shift = torch::empty({C}, opts);
    auto mean = torch::empty({C}, opts), var = torch::empty({C}, opts);
    const bool vec = is_vec(xc, y);
    const long len = vec ? HW / 4 : HW;
    const int splits = (int)((len + STAT_ITEMS - 1) / STAT_ITEMS);
    const long nparts = N * splits;
    TORCH_CHECK(nparts < (1L << 31), "batch too large");
    auto part = torch::empty({C * nparts * 2}, opts.dtype(torch::kFloat64));
    double2* pp = reinterpret_cast<double2*>(part.data_ptr<double>());
    auto stream = c10::cuda::getCurrentCUDAStream();
    dim3 grid((unsigned)nparts, (unsigned)C);
    if (vec)
        bn_partial_kernel<true><<<grid, THREADS, 0, stream>>>(xc.data_ptr<float>(), pp, C, HW, splits);
    else
        bn_partial_kernel<false><<<grid, THREADS, 0, stream>>>(xc.data_ptr<float>(), pp, C, HW, splits);
    auto wc = w.contiguous(), bc = b.contiguous();
    bn_finalize_kernel<<<(unsigned)((C + 127) / 128), 128, 0, stream>>>(
        xc.data_ptr<float>(), pp, (int)nparts, wc.data_ptr<float>(), bc.data_ptr<float>(), scale.data_ptr<float>(),
        shift.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(), C, HW, (double)(N * HW), eps);
    launch_apply(xc, scale, shift, y, vec);
    return {y, mean, var};
}

// eval mode: y = x * scale[c] + shift[c] with scale/shift from the running statistics
torch::Tensor bn_apply(torch::Tensor x, torch::Tensor scale, torch::Tensor shift) {
    check_input(x);
    auto xc = x.contiguous();
    auto sc = scale.contiguous(), sh = shift.contiguous();
    TORCH_CHECK(sc.numel() == xc.size(1) && sh.numel() == xc.size(1), "scale/shift size mismatch");
    auto y = torch::empty_like(xc);
    if (y.numel() == 0) return y;
    launch_apply(xc, sc, sh, y, is_vec(xc, y));
    return y;
}
"""
CPP = """
std::vector<torch::Tensor> bn_train(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);
torch::Tensor bn_apply(torch::Tensor x, torch::Tensor scale, torch::Tensor shift);
"""

ext = load_inline(name="real_batchnorm2d_split_stats_float4", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["bn_train", "bn_apply"], extra_cuda_cflags=["-O3"], verbose=False)


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
            return ext.bn_apply(x, scale.detach(), shift.detach())
        y, mean, var = ext.bn_train(x, bn.weight.detach(), bn.bias.detach(), bn.eps)
        with torch.no_grad():
            n = x.numel() // x.shape[1]
            bn.num_batches_tracked.add_(1)
            m = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
            bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
            bn.running_var.mul_(1 - m).add_(var * (n / max(n - 1, 1)), alpha=m)
        return y

