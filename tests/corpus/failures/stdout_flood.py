"""Output flood: print ~100 MB to stdout (and some to stderr) in the first forward call.

If the judge read the worker's stdout through a pipe it never drains, the worker would block once
the pipe buffer fills (a hang); if it collected everything in memory, the judge would balloon.
Verdict `ok` because that is what a robust evaluator should give: the flood is the candidate's own
business (its forward is torch.relu, the reference's own op: no speedup credit). Each worker's
stdout/stderr go to its own log file, capped by RLIMIT_FSIZE at 1 GiB;
100 MB fits, so the candidate is simply correct (past 1 GiB, SIGXFSZ kills it: `runtime_error crash`).

task: cpu/relu
expect: ok
same_as_reference: true
"""
import sys

import torch
import torch.nn as nn

LINE = "x" * 1023 + "\n"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.flooded = False

    def forward(self, x):
        if not self.flooded:
            self.flooded = True
            for _ in range(100 * 1024):  # 100 MB
                sys.stdout.write(LINE)
            sys.stdout.flush()
            sys.stderr.write(LINE * 1024)
        return torch.relu(x)
