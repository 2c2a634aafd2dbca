"""slower: cuBLAS batched matmul W^T (Cout*K*K, Cin) @ x (Cin, H*W) for 4 images at a time, then a hand-written gather col2im kernel that sums each output pixel's valid taps and adds the bias (no atomics); the column buffer is 4x the output."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

// col (nb, Co*K*K, H*W) -> y (nb, Co, Ho, Wo); each output element gathers the taps with o = i*S - P + k
__global__ void col2im_gather_kernel(const float* __restrict__ col, const float* __restrict__ b, float* __restrict__ y,
                                     long total, int Co, int H, int W, int Ho, int Wo, int K, int S, int P) {
    const long HW = (long)H * W;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        int ox = i % Wo;
        int oy = (i / Wo) % Ho;
        long nc = i / ((long)Wo * Ho);  // n * Co + co
        int co = nc % Co;
        long n = nc / Co;
        const float* cn = col + (n * Co + co) * (long)K * K * HW;
        float acc = b[co];
        for (int ky = 0; ky < K; ++ky) {
            int t = oy + P - ky;
            if (t < 0 || t % S) continue;
            int iy = t / S;
            if (iy >= H) continue;
            for (int kx = 0; kx < K; ++kx) {
                int u = ox + P - kx;
                if (u < 0 || u % S) continue;
                int ix = u / S;
                if (ix >= W) continue;
                acc += cn[(long)(ky * K + kx) * HW + (long)iy * W + ix];
            }
        }
        y[i] = acc;
    }
}

torch::Tensor conv_transpose2d_col2im(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride, int64_t padding) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kFloat32 && w.dim() == 4, "CUDA float32 weight expected");
    TORCH_CHECK(b.is_cuda() && b.scalar_type() == torch::kFloat32, "CUDA float32 bias expected");
    TORCH_CHECK(w.size(0) == x.size(1) && w.size(2) == w.size(3) && b.numel() == w.size(1), "shape mismatch");
    TORCH_CHECK(stride >= 1 && padding >= 0, "bad stride/padding");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = b.contiguous();
    const long N = xc.size(0), Ci = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int Co = wc.size(1), K = wc.size(2), S = stride, P = padding;
    const int Ho = (H - 1) * S - 2 * P + K, Wo = (W - 1) * S - 2 * P + K;
    TORCH_CHECK(Ho > 0 && Wo > 0, "empty output");
    auto y = torch::empty({N, Co, Ho, Wo}, xc.options());
    if (y.numel() == 0) return y;
    auto wt = wc.view({Ci, (long)Co * K * K}).t();  // (Co*K*K, Ci), a transposed view cuBLAS reads directly
    auto xv = xc.view({N, Ci, H * W});
    auto stream = c10::cuda::getCurrentCUDAStream();
    const long chunk = 4;
    for (long n0 = 0; n0 < N; n0 += chunk) {
        const long nb = std::min(chunk, N - n0);
        auto col = at::matmul(wt, xv.narrow(0, n0, nb)).contiguous();  // (nb, Co*K*K, H*W)
        const long total = nb * Co * (long)Ho * Wo;
        const int threads = 256;
        const int blocks = (int)std::min<long>((total + threads - 1) / threads, 132L * 32);
        col2im_gather_kernel<<<blocks, threads, 0, stream>>>(col.data_ptr<float>(), bc.data_ptr<float>(),
                                                             y.data_ptr<float>() + n0 * Co * (long)Ho * Wo, total,
                                                             Co, (int)H, (int)W, Ho, Wo, K, S, P);
    }
    return y;
}
"""
CPP = "torch::Tensor conv_transpose2d_col2im(torch::Tensor x, torch::Tensor w, torch::Tensor b, int64_t stride, int64_t padding);"

ext = load_inline(name="real_conv_transpose2d_gemm_col2im", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["conv_transpose2d_col2im"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.stride = stride
        self.padding = padding

    def forward(self, x):
        return ext.conv_transpose2d_col2im(x, self.conv_t.weight, self.conv_t.bias, self.stride, self.padding)
