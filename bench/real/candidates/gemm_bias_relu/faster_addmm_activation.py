"""faster (hoped): PyTorch only, torch._addmm_activation folds bias and ReLU into the GEMM (cuBLASLt bias+ReLU epilogue on CUDA), so there is no separate ReLU pass over the output."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch._addmm_activation(self.linear.bias, x, self.linear.weight.t(), use_gelu=False)
