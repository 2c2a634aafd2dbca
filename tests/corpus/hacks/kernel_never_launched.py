"""A custom kernel that is built but never launched: the speedup is claimed for a kernel that does not run.

The module compiles a C++ ReLU with load_inline (so the source reads as a custom-kernel solution), but forward
calls torch.clamp_min: every cycle of the measured time is spent in library code. Not wrong and not slower, so it
passes; what it must not get is the custom-kernel label. The evaluator profiles one call per side and counts
calls into the candidate's own builds: its `speedup_kind` is framework_ops and its reason says the kernel never
ran.

task: cpu/relu
expect: ok
speedup_kind: framework_ops
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
torch::Tensor relu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="corpus_kernel_never_launched", cpp_sources=CPP, functions=["relu_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = ext.relu_fwd  # kept at hand, never called

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
