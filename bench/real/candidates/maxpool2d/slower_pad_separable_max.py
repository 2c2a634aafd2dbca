"""slower: pads with -inf (F.pad), then a separable max: three strided row views reduced with torch.maximum, then three strided column views; the padded copy and the intermediate cost more traffic than the single pooling kernel."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        p = self.pool
        k, s, pad = p.kernel_size, p.stride, p.padding
        if not (isinstance(k, int) and isinstance(s, int) and isinstance(pad, int)) or p.dilation != 1 or p.ceil_mode:
            return p(x)
        h, w = x.shape[-2:]
        ho, wo = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
        xp = F.pad(x, (pad, pad, pad, pad), value=float("-inf"))
        rows = xp[..., 0:(ho - 1) * s + 1:s, :]
        for dy in range(1, k):
            rows = torch.maximum(rows, xp[..., dy:dy + (ho - 1) * s + 1:s, :])
        out = rows[..., 0:(wo - 1) * s + 1:s]
        for dx in range(1, k):
            out = torch.maximum(out, rows[..., dx:dx + (wo - 1) * s + 1:s])
        return out.contiguous()
