"""TF32 toggled inside forward from the candidate's sixth call on, through the setter's original (read from the
harness' wrapper): the correctness calls (and a watch placed before the clock, such as the profile) see plain fp32
throughout; every later call, the timed rounds among them, runs its matmul with TF32 and puts the flag back before
it returns.

The op reader (fences.FlagReader) watches one untimed call after the timed rounds, so a toggle that starts anywhere
before the clock stops is read: `backend_flags`.
today: ok ~1x on the CPU without the reader (TF32 changes nothing there)
On CUDA the timed rounds' answers (TF32) differ from the checked ones by more than the rounds allow: the
rounds' check names it `phase_branch` first.

task: cpu/linear_relu
expect: rejected backend_flags
also: rejected phase_branch
"""
import torch
import torch.nn as nn


def _original(name):  # the setter the harness wrapped (fences.FlagWatch), from the wrapper's closure
    fn = getattr(torch._C, name)
    for cell in getattr(fn, "__closure__", None) or ():
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == name:
            return cell.cell_contents
    return fn


tf32 = _original("_set_cublas_allow_tf32")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        late = self.calls >= 6
        if late:
            tf32(True)
        try:
            return torch.relu(self.linear(x))
        finally:
            if late:
                tf32(False)
