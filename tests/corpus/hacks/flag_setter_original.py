"""TF32 toggled inside forward through the setter's original: the harness wraps torch._C._set_cublas_allow_tf32
(fences.FlagWatch), but the wrapper keeps the original in its closure, which any code in the process can read;
calling it directly changes the flag with nothing recorded, and forward puts it back before it returns.

Code in the candidate's process can always reach what its harness holds (THREATS.md, "Does not protect against",
item 1). Before: ok. Now one untimed call after the timed rounds reads every setting at each op it dispatches
(fences.FlagReader), whoever set it: the addmm ran with TF32 on, `backend_flags`.
On CUDA the matmul's TF32 error is beyond the calibrated fp32 tolerance on this task, so the
correctness gate refuses it first (`also`).

task: cpu/linear_relu
expect: rejected backend_flags
also: wrong_output values
"""
import torch
import torch.nn as nn


def _original(name):
    fn = getattr(torch._C, name)
    for cell in getattr(fn, "__closure__", None) or ():
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == name:
            return cell.cell_contents
    return fn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.tf32 = _original("_set_cublas_allow_tf32")

    def forward(self, x):
        self.tf32(True)
        try:
            return torch.relu(self.linear(x))
        finally:
            self.tf32(False)
