"""slower: transposed conv as an ordinary conv2d on the zero-dilated input (s-1 zeros between pixels, K-1-P padding) with the kernel flipped and in/out channels swapped; 3 of every 4 multiplies are by inserted zeros."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        ct = self.conv_t
        (sh, sw), (ph, pw), (kh, kw) = ct.stride, ct.padding, ct.kernel_size
        if ct.output_padding != (0, 0) or ct.dilation != (1, 1) or ct.groups != 1 or ph > kh - 1 or pw > kw - 1:
            return ct(x)  # cases this rewrite does not cover
        n, ci, h, w = x.shape
        xd = x.new_zeros(n, ci, (h - 1) * sh + 1, (w - 1) * sw + 1)
        xd[:, :, ::sh, ::sw] = x
        wf = torch.flip(ct.weight, dims=(2, 3)).transpose(0, 1)  # (Cout, Cin, kh, kw)
        return F.conv2d(xd, wf, ct.bias, padding=(kh - 1 - ph, kw - 1 - pw))
