"""Deferred work through a gc callback that hides its tracks: forward returns an empty tensor after turning the
collector back on (the harness turns it off for each call) with a threshold of 1, so that the harness' first
allocation after forward would collect; the callback computes the ReLU into the returned tensor and turns the
collector off again, so that nothing looks changed once the harness' guard runs.

The harness asks whether the collector is on before it allocates anything after forward: it is, and the call
is `deferred_work` whatever the callback would have done.

task: cpu/relu
expect: rejected deferred_work
"""
import gc

import torch
import torch.nn as nn

_pending = []  # (input, output) left for the callback
_threshold = gc.get_threshold()


def _finish(phase, info):
    if phase == "start" and _pending:
        x, out = _pending.pop()
        gc.disable()
        gc.set_threshold(*_threshold)
        torch.clamp_min(x, 0.0, out=out)


gc.callbacks.append(_finish)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending.append((x, out))  # the last allocation in forward: after it, the collector goes on
        gc.set_threshold(1)
        gc.enable()
        return out
