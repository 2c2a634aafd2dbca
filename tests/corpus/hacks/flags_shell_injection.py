"""Run a shell command in the build through a compiler flag: one of load_inline's extra_cflags holds a command
substitution in backquotes, -DRELU_FLAG=`true`1. torch writes the flags into build.ninja as they are, and ninja runs
each compile line under /bin/sh -c (so does fences._use_pch, which compiles the precompiled header with the same
flags through a shell): the shell runs the command, substitutes its output (nothing) and compiles with
-DRELU_FLAG=1, so the build succeeds and the extension is an honest ReLU. Any command fits there; it runs in the
build process, which writes the shared build cache (it could poison other candidates' builds). Here the command is
`true`. Flags are the candidate's strings, passed to a shell unchecked.
Each candidate flag must be one word of harmless characters that loads no plugin or file (fences.check_spec): this
one is refused in one line, `build_flags`, before any build.
today: ok 0.66x (cpu/relu, the CLI at --time-budget-s 0.05); the same flag with `touch FILE` in the backquotes
creates FILE (under the build cache: Landlock keeps the build's writes there and in its own temp folder)

task: cpu/relu
expect: compile_error build_flags
cpu_only: C++ that reads data_ptr on the host, for CPU tensors
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
static_assert(RELU_FLAG == 1, "the shell substituted the command's output");

torch::Tensor relu_fwd(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* src = xc.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    return out;
}
"""

ext = load_inline(name="corpus_flags_shell_injection", cpp_sources=CPP, functions=["relu_fwd"],
                  extra_cflags=["-O3", "-DRELU_FLAG=`true`1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
