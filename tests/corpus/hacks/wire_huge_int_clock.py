"""Blame the task with a number: the candidate wraps json.dumps in its worker (json is not a watched namespace), so
every answer to a call says forward took 10**400 ms, an integer (JSON's integers have any size; the reply's float
accepts an int). The judge's statistics over the timed rounds overflowed (an int too large for a float), the judge
took the exception for a broken task, and the verdict was `runtime_error reference`: the candidate's bad data
marked the task as failing (evaluate_many even evaluates a reference failure twice). The wire refuses a number that
is not finite or beyond +-2**53 (fences.recv_data): the answer is `wire`, the candidate's fault.
today: runtime_error reference, "OverflowError: integer division result too large for a float" (cpu/relu, the CLI at
--time-budget-s 0.05)

task: cpu/relu
expect: rejected wire
"""
import json

import torch
import torch.nn as nn

_dumps = json.dumps


def _forged(obj, *args, **kwargs):
    """The worker's answer to a call, ("ok", (precise ms, worker's ms, host ms, aliases, threads)): precise ms huge."""
    if type(obj) is tuple and len(obj) == 2 and obj[0] == "ok" and type(obj[1]) is tuple and len(obj[1]) == 5:
        obj = ("ok", (10 ** 400, *obj[1][1:]))
    return _dumps(obj, *args, **kwargs)


json.dumps = _forged


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
