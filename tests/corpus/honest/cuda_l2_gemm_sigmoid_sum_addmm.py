"""cuBLAS GEMM with the bias folded in (addmm: bias + x @ W^T in one call), then an in-place sigmoid and the row sum.

Eager's Linear runs the same GEMM; the gain here is the epilogue: sigmoid_ overwrites the GEMM's own (2048, 4096)
result instead of allocating a second one, and the row sum reads it once. fp32 throughout: no TF32, no flags touched.

task: level2/gemm_sigmoid_sum
device: cuda
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same parameters, same random draws as the reference

    def forward(self, x):
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return y.sigmoid_().sum(dim=1)
