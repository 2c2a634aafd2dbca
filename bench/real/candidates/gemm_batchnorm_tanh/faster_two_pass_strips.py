"""faster (hoped): CUDA, everything in one C++ call: bias-less torch::mm, a block per 32-column strip computes the exact two-pass mean and centred variance (fp64), running stats updated, then one in-place float4 normalise + affine + tanh kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define SC 32  // columns per strip
#define SR 32  // thread rows per block: 1024 threads

__device__ __forceinline__ double strip_sum(double v, double (*sh)[SC + 1]) {
    int tx = threadIdx.x, ty = threadIdx.y;
    sh[ty][tx] = v;
    __syncthreads();
    for (int k = SR / 2; k > 0; k >>= 1) {
        if (ty < k) sh[ty][tx] += sh[ty + k][tx];
        __syncthreads();
    }
    double r = sh[0][tx];
    __syncthreads();  // sh is reused by the next call
    return r;
}

// one block per strip of SC columns of h (M, N): mean, then the mean of squared deviations (biased variance)
__global__ void __launch_bounds__(SC * SR) strip_stats(const float* __restrict__ h, float* __restrict__ mean_out,
                                                      float* __restrict__ var_out, long M, long N) {
    __shared__ double sh[SR][SC + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    long c = blockIdx.x * (long)SC + tx;
    bool live = c < N;
    double s = 0.0;
    if (live)
        for (long r = ty; r < M; r += SR) s += (double)h[r * N + c];
    double mean = strip_sum(s, sh) / (double)M;
    double q = 0.0;
    if (live)
        for (long r = ty; r < M; r += SR) {
            double d = (double)h[r * N + c] - mean;
            q += d * d;
        }
    double var = strip_sum(q, sh) / (double)M;
    if (ty == 0 && live) {
        mean_out[c] = (float)mean;
        var_out[c] = (float)var;
    }
}

__device__ __forceinline__ float bn_tanh1(float v, float m, float a, float b) { return tanhf((v - m) * a + b); }

template <typename V> struct Lanes;
template <> struct Lanes<float> { static constexpr int n = 1; };
template <> struct Lanes<float4> { static constexpr int n = 4; };

// h (rows, cols) in place, V = float4 (cols in float4s) or float
template <typename V>
__global__ void bn_apply(V* __restrict__ h, const V* __restrict__ mean, const V* __restrict__ scale,
                      const V* __restrict__ shift, long n, long cols) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) {
        long c = i % cols;
        V v = h[i], m = mean[c], a = scale[c], b = shift[c];
        float* fv = reinterpret_cast<float*>(&v);
        const float *fm = reinterpret_cast<const float*>(&m), *fa = reinterpret_cast<const float*>(&a),
                    *fb = reinterpret_cast<const float*>(&b);
#pragma unroll
        for (int j = 0; j < Lanes<V>::n; ++j) fv[j] = bn_tanh1(fv[j], fm[j], fa[j], fb[j]);
        h[i] = v;
    }
}

// training: batch stats, running buffers updated with factor f (momentum); eval: running stats
torch::Tensor linear_bn_tanh(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor gamma, torch::Tensor beta,
                             torch::Tensor running_mean, torch::Tensor running_var, bool use_batch_stats,
                             bool update_running, double f, double eps) {
    for (auto* t : {&x, &w, &b, &gamma, &beta})
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32, "CUDA float32 tensors expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "shape mismatch");
    long M = x.size(0), N = w.size(0);
    TORCH_CHECK(b.numel() == N && gamma.numel() == N && beta.numel() == N, "per-feature vectors expected");
    auto h = torch::mm(x.contiguous(), w.contiguous().t());  // (M, N), without the bias
    if (h.numel() == 0) return h;
    auto stream = c10::cuda::getCurrentCUDAStream();
    torch::Tensor mean, var;
    if (use_batch_stats) {
        mean = torch::empty({N}, h.options());
        var = torch::empty({N}, h.options());
        strip_stats<<<(unsigned)((N + SC - 1) / SC), dim3(SC, SR), 0, stream>>>(
            h.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(), M, N);
        if (update_running) {
            double unbias = M > 1 ? (double)M / (double)(M - 1) : 1.0;
            running_mean.mul_(1.0 - f).add_(mean + b, f);
            running_var.mul_(1.0 - f).add_(var * unbias, f);
        }
    } else {
        mean = (running_mean - b).contiguous();
        var = running_var;
    }
    auto scale = (gamma * torch::rsqrt(var + eps)).contiguous();
    auto shift = beta.contiguous();
    float* hp = h.data_ptr<float>();
    const float *mp = mean.data_ptr<float>(), *ap = scale.data_ptr<float>(), *bp = shift.data_ptr<float>();
    auto al = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    bool vec = N % 4 == 0 && al(hp) && al(mp) && al(ap) && al(bp);
    long work = vec ? h.numel() / 4 : h.numel();
    long blocks = (work + 255) / 256;
    if (blocks > 132L * 32) blocks = 132L * 32;
    if (vec)
        bn_apply<float4><<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<float4*>(hp), reinterpret_cast<const float4*>(mp),
            reinterpret_cast<const float4*>(ap), reinterpret_cast<const float4*>(bp), work, N / 4);
    else
        bn_apply<float><<<(unsigned)blocks, 256, 0, stream>>>(hp, mp, ap, bp, work, N);
    return h;
}
"""
CPP = """
torch::Tensor linear_bn_tanh(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor gamma, torch::Tensor beta,
                             torch::Tensor running_mean, torch::Tensor running_var, bool use_batch_stats,
                             bool update_running, double f, double eps);
"""

ext = load_inline(name="real_gemm_batchnorm_tanh_faster_two_pass_strips", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["linear_bn_tanh"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn = self.bn
        use_batch = bn.training or bn.running_mean is None
        update = bn.training and bn.track_running_stats
        f = 0.0
        if update:
            bn.num_batches_tracked.add_(1)
            f = 1.0 / float(bn.num_batches_tracked) if bn.momentum is None else bn.momentum
        rm = bn.running_mean if bn.running_mean is not None else torch.zeros_like(bn.bias)
        rv = bn.running_var if bn.running_var is not None else torch.ones_like(bn.bias)
        return ext.linear_bn_tanh(x, self.linear.weight, self.linear.bias, bn.weight, bn.bias, rm, rv,
                                  use_batch, update, f, bn.eps)
