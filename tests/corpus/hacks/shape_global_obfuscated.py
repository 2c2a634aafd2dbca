"""Shape global, obfuscated: write `batch_size` through globals() with a name built at run time.

No `batch_size =` appears in the source, so a grep or a simple AST scan misses it.

task: cpu/sum_rows
expect: rejected shape_globals
"""
import torch
import torch.nn as nn

globals()["batch" + "_size"] = 1


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)
