# cudal1 best for task level2/gemm_batchnorm_tanh: speedup 1.033x, status ok, found at step 0
"""faster (hoped): CUDA, bias-less cuBLAS GEMM (the bias cancels in training-mode BN), a column-stats kernel (fp64 sums, row-split partials, no atomics), then one in-place float4 kernel for normalise + affine + tanh."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

#define SC 32     // columns per block (one warp wide: a warp reads 128 contiguous bytes of a row)
#define SR 16     // thread rows per block
#define SPLIT 16  // blocks along the rows

// partial sums of h (M, N) per column over the rows this block's thread rows visit; fp64 so E[v^2] - mean^2 is safe
__global__ void col_partials(const float* __restrict__ h, double* __restrict__ psum, double* __restrict__ psq,
                             long M, long N) {
    __shared__ double ss[SR][SC + 1], sq[SR][SC + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    long c = blockIdx.x * (long)SC + tx;
    double s = 0.0, q = 0.0;
    if (c < N)
        for (long r = blockIdx.y * (long)SR + ty; r < M; r += (long)SR * gridDim.y) {
            double v = h[r * N + c];
            s += v;
            q += v * v;
        }
    ss[ty][tx] = s;
    sq[ty][tx] = q;
    __syncthreads();
    if (ty == 0 && c < N) {
        for (int k = 1; k < SR; ++k) { s += ss[k][tx]; q += sq[k][tx]; }
        psum[blockIdx.y * N + c] = s;
        psq[blockIdx.y * N + c] = q;
    }
}

// stats (2, N): row 0 the batch mean, row 1 the biased batch variance
__global__ void col_finalize(const double* __restrict__ psum, const double* __restrict__ psq, float* __restrict__ stats,
                             long M, long N, int split) {
    long c = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (c >= N) return;
    double s = 0.0, q = 0.0;
    for (int k = 0; k < split; ++k) { s += psum[k * N + c]; q += psq[k * N + c]; }
    double mean = s / (double)M;
    double var = q / (double)M - mean * mean;
    stats[c] = (float)mean;
    stats[N + c] = (float)(var > 0.0 ? var : 0.0);
}

torch::Tensor batch_stats(torch::Tensor h) {
    TORCH_CHECK(h.is_cuda() && h.scalar_type() == torch::kFloat32 && h.dim() == 2, "CUDA float32 2-D tensor expected");
    auto hc = h.contiguous();
    long M = hc.size(0), N = hc.size(1);
    TORCH_CHECK(M > 0, "empty batch");
    auto stats = torch::empty({2, N}, hc.options());
    if (N == 0) return stats;
    int split = (int)((M + SR - 1) / SR < SPLIT ? (M + SR - 1) / SR : SPLIT);
    auto part = torch::empty({2, (long)split, N}, hc.options().dtype(torch::kFloat64));
    double* psum = part.data_ptr<double>();
    double* psq = psum + (long)split * N;
    auto stream = c10::cuda::getCurrentCUDAStream();
    dim3 grid((unsigned)((N + SC - 1) / SC), (unsigned)split);
    col_partials<<<grid, dim3(SC, SR), 0, stream>>>(hc.data_ptr<float>(), psum, psq, M, N);
    col_finalize<<<(unsigned)((N + 255) / 256), 256, 0, stream>>>(psum, psq, stats.data_ptr<float>(), M, N, split);
    return stats;
}

__device__ __forceinline__ float bn_tanh1(float v, float m, float a, float b) { return tanhf((v - m) * a + b); }

// h (rows, cols) in place: tanh((h - mean) * scale + shift), per column; float4 over cols4 vectors per row
__global__ void apply_vec4(float4* __restrict__ h, const float4* __restrict__ mean, const float4* __restrict__ scale,
                           const float4* __restrict__ shift, long n4, long cols4) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        long c = i % cols4;
        float4 v = h[i], m = mean[c], a = scale[c], b = shift[c];
        v.x = bn_tanh1(v.x, m.x, a.x, b.x); v.y = bn_tanh1(v.y, m.y, a.y, b.y);
        v.z = bn_tanh1(v.z, m.z, a.z, b.z); v.w = bn_tanh1(v.w, m.w, a.w, b.w);
        h[i] = v;
    }
}

__global__ void apply_scalar(float* __restrict__ h, const float* __restrict__ mean, const float* __restrict__ scale,
                             const float* __restrict__ shift, long n, long cols) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) {
        long c = i % cols;
        h[i] = bn_tanh1(h[i], mean[c], scale[c], shift[c]);
    }
}

// h is written in place and returned; mean, scale, shift are (N,)
torch::Tensor bn_tanh_(torch::Tensor h, torch::Tensor mean, torch::Tensor scale, torch::Tensor shift) {
    TORCH_CHECK(h.is_cuda() && h.scalar_type() == torch::kFloat32 && h.dim() == 2 && h.is_contiguous(),
                "contiguous CUDA float32 2-D tensor expected");
    long N = h.size(1), n = h.numel();
    TORCH_CHECK(mean.numel() == N && scale.numel() == N && shift.numel() == N, "per-column vectors expected");
    TORCH_CHECK(mean.scalar_type() == torch::kFloat32 && scale.scalar_type() == torch::kFloat32 &&
                shift.scalar_type() == torch::kFloat32 && mean.is_cuda() && scale.is_cuda() && shift.is_cuda(),
                "CUDA float32 vectors expected");
    if (n == 0) return h;
    auto mc = mean.contiguous(), ac = scale.contiguous(), bc = shift.contiguous();
    float* hp = h.data_ptr<float>();
    const float *mp = mc.data_ptr<float>(), *ap = ac.data_ptr<float>(), *bp = bc.data_ptr<float>();
    auto stream = c10::cuda::getCurrentCUDAStream();
    auto al = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    bool vec = N % 4 == 0 && al(hp) && al(mp) && al(ap) && al(bp);
    long work = vec ? n / 4 : n;
    long blocks = (work + 255) / 256;
    if (blocks > 132L * 32) blocks = 132L * 32;
    if (vec)
        apply_vec4<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<float4*>(hp), reinterpret_cast<const float4*>(mp),
            reinterpret_cast<const float4*>(ap), reinterpret_cast<const float4*>(bp), n / 4, N / 4);
    else
        apply_scalar<<<(unsigned)blocks, 256, 0, stream>>>(hp, mp, ap, bp, n, N);
    return h;
}
"""
CPP = """
torch::Tensor batch_stats(torch::Tensor h);
torch::Tensor bn_tanh_(torch::Tensor h, torch::Tensor mean, torch::Tensor scale, torch::Tensor shift);
"""

ext = load_inline(name="real_gemm_batchnorm_tanh_faster_colstats_fused", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["batch_stats", "bn_tanh_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        bn = self.bn
        h = torch.mm(x, self.linear.weight.t())  # the bias cancels against the batch mean; only the buffers need it
        if bn.training or bn.running_mean is None:
            stats = ext.batch_stats(h)
            mean, var = stats[0], stats[1]
            if bn.training and bn.track_running_stats:
                bn.num_batches_tracked.add_(1)
                f = 1.0 / float(bn.num_batches_tracked) if bn.momentum is None else bn.momentum
                n = h.shape[0]
                with torch.no_grad():
                    bn.running_mean.mul_(1.0 - f).add_(mean + self.linear.bias, alpha=f)
                    bn.running_var.mul_(1.0 - f).add_(var * (n / (n - 1)), alpha=f)
        else:
            mean, var = bn.running_mean - self.linear.bias, bn.running_var
        scale = bn.weight * torch.rsqrt(var + bn.eps)
        return ext.bn_tanh_(h, mean, scale, bn.bias)

