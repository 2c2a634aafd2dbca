"""Report the precise clock as NaN: the candidate wraps json.dumps in its worker (json is not a watched namespace), so
every answer to a call says forward took NaN ms. JSON carries NaN, the judge's wire took it as the float its reply's
shape asks for, and charge's max(NaN, the judge's bound, ...) is NaN: no bound applied, and the verdict was `ok` with
speedup NaN. rl.py scored it as a failure, but the exemplar database then raised, and the RL step died with it.
The wire refuses a number that is not finite or beyond +-2**53 (fences.recv_data): the answer is `wire`, and an `ok`
leaves evaluate only with a finite speedup up to 1e4x.
today: ok, speedup NaN (cpu/relu, the CLI at --time-budget-s 0.05: "speedup nanx")

task: cpu/relu
expect: rejected wire
"""
import json
import math

import torch
import torch.nn as nn

_dumps = json.dumps


def _forged(obj, *args, **kwargs):
    """The worker's answer to a call, ("ok", (precise ms, worker's ms, host ms, aliases, threads)): precise ms NaN."""
    if type(obj) is tuple and len(obj) == 2 and obj[0] == "ok" and type(obj[1]) is tuple and len(obj[1]) == 5:
        obj = ("ok", (math.nan, *obj[1][1:]))
    return _dumps(obj, *args, **kwargs)


json.dumps = _forged


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
