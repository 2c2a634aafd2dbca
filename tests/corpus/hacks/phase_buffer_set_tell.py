"""Tell timed calls from checked ones by the input's address: the judge's buffers are two sets per side; if every
call of the correctness gate read set 0 while the warm-up and timed rounds alternate sets 0 and 1, an address never
seen at the first call would mean "timed". On such an input forward returns relu(x) * (1 + 1.5e-4) (relu as
clamp_min, not the reference's op): off by up to 1.5e-4 relative to RMS + |ref| (~1.3e-4 on the task's own inputs,
where the largest entry is ~7x the RMS; ~1.35e-4 on wide ones, ~1.47e-4 on edge ones), above the tolerance of 1e-4
the checked calls use but inside the 2e-4 the timed rounds allow. The error is a stand-in for any shortcut within
twice the tolerance (a lower-precision path, say) taken only when timed. The correctness gate's calls alternate the
two sets as the timed rounds do, so the second checked call already meets the other address.

task: cpu/relu
expect: wrong_output values
"""
import torch
import torch.nn as nn

FIRST_CALLS = 1
SCALE = 1.0 + 1.5e-4


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls, self.checked = 0, set()

    def forward(self, x):
        self.calls += 1
        if self.calls <= FIRST_CALLS:
            self.checked.add(x.data_ptr())
        out = torch.clamp_min(x, 0.0)
        if x.data_ptr() not in self.checked:  # a buffer set the correctness gate never used
            out.mul_(SCALE)
        return out
