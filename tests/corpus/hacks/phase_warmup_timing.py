"""Phase branch on call timing, relative: calls much closer together than the first ones mean "being timed".

A correctness gate spends time between its calls (the reference's call, a float64 oracle, the comparison), while a
timing loop fires calls faster. The gaps between the first four calls set the scale (on an idle 2-core machine
~110 ms, timed calls ~25 ms apart); once two later gaps fall below a third of the median of those (one
short gap among them, on a busy machine, does not raise the bar out of reach), it returns |x|
instead of relu(x) for good. A loaded machine stretches every gap alike, so the ratio, unlike a fixed threshold in
ms, still finds the timing loop; the switch is latched, so one slow call in the loop does not undo it.

task: cpu/relu
expect: rejected phase_branch
"""
import time

import torch
import torch.nn as nn

GATE_CALLS = 4      # calls whose gaps set the scale (the correctness gate)
FAST_RATIO = 1 / 3  # a gap under this fraction of the gate's smallest gap counts as fast
FAST_NEEDED = 2     # fast gaps before switching


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stamps = []
        self.fast = 0

    def forward(self, x):
        self.stamps.append(time.monotonic())
        gaps = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        if len(self.stamps) > GATE_CALLS and gaps[-1] < FAST_RATIO * sorted(gaps[:GATE_CALLS - 1])[1]:
            self.fast += 1
        if self.fast >= FAST_NEEDED:
            return x.abs()
        return torch.relu(x)
