"""Out of memory: allocate a 4 PiB scratch buffer in forward; the allocator refuses.

task: cpu/relu
expect: runtime_error oom
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scratch = torch.empty(1 << 50, dtype=torch.float32)
        return torch.relu(x) + scratch[:1]
