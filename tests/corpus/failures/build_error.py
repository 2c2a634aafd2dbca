"""C++ build error: load_inline with a kernel that does not compile (undeclared identifier).

task: cpu/relu
expect: compile_error build
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
torch::Tensor relu_fwd(torch::Tensor x) {
    auto out = torch::empty_like(x);
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = std::max(src[i], 0.0f);  // `src` is never declared
    return out;
}
"""

ext = load_inline(name="corpus_build_error", cpp_sources=CPP, functions=["relu_fwd"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x)
