"""slower: hand-written im2col kernel per image into a reused (Cin*9, H*W) buffer, then cuBLAS addmm (bias folded in) writing straight into that image's NCHW output; the column buffer costs 9x the input in extra traffic."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <c10/cuda/CUDAStream.h>

// col[(ci*K + ky)*K + kx][oy*W + ox] = x[ci][oy + ky - P][ox + kx - P] (zero outside), stride 1, same padding
__global__ void im2col_kernel(const float* __restrict__ x, float* __restrict__ col, int Ci, int H, int W, int K, int P) {
    const long HW = (long)H * W;
    const long total = (long)Ci * K * K * HW;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        long pix = i % HW;
        long row = i / HW;
        int kx = row % K, ky = (row / K) % K, ci = row / (K * K);
        int oy = pix / W, ox = pix % W;
        int iy = oy + ky - P, ix = ox + kx - P;
        col[i] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x[((long)ci * H + iy) * W + ix] : 0.f;
    }
}

torch::Tensor conv2d_im2col(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "CUDA float32 NCHW input expected");
    TORCH_CHECK(w.is_cuda() && w.scalar_type() == torch::kFloat32 && w.dim() == 4, "CUDA float32 weight expected");
    TORCH_CHECK(b.is_cuda() && b.scalar_type() == torch::kFloat32, "CUDA float32 bias expected");
    TORCH_CHECK(w.size(2) == w.size(3) && w.size(2) % 2 == 1, "odd square kernel expected");
    TORCH_CHECK(w.size(1) == x.size(1) && b.numel() == w.size(0), "shape mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    const long N = xc.size(0), Ci = xc.size(1), H = xc.size(2), W = xc.size(3), Co = wc.size(0);
    const int K = wc.size(2), P = K / 2;
    auto y = torch::empty({N, Co, H, W}, xc.options());
    if (y.numel() == 0) return y;
    auto col = torch::empty({Ci * K * K, H * W}, xc.options());
    auto w2 = wc.view({Co, Ci * K * K});
    auto bias = b.contiguous().view({Co, 1}).expand({Co, H * W});
    auto stream = c10::cuda::getCurrentCUDAStream();
    const long total = Ci * K * K * H * W;
    const int threads = 256;
    const int blocks = (int)std::min<long>((total + threads - 1) / threads, 132L * 16);
    for (long n = 0; n < N; ++n) {
        im2col_kernel<<<blocks, threads, 0, stream>>>(xc.data_ptr<float>() + n * Ci * H * W, col.data_ptr<float>(),
                                                      (int)Ci, (int)H, (int)W, K, P);
        auto out = y.select(0, n).view({Co, H * W});
        at::addmm_out(out, bias, w2, col);
    }
    return y;
}
"""
CPP = "torch::Tensor conv2d_im2col(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="real_conv2d_im2col_gemm", cpp_sources=CPP, cuda_sources=CUDA,
                  functions=["conv2d_im2col"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return ext.conv2d_im2col(x, self.conv.weight, self.conv.bias)
