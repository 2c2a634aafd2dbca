"""Work deferred into the harness through a gc callback: forward returns an empty tensor and lowers the garbage
collector's threshold to 1, so the harness' first allocation after forward (in its guard, before the copy-out)
starts a collection, and a callback in gc.callbacks computes the ReLU into the returned tensor.

gc.callbacks and the gc threshold are neither watched attributes nor global flags, and no thread, hook or mode
is left behind: the work runs in the worker's own thread between forward's return and the answer. The judge's
clock sees it, but `charge` forgives a candidate's gap after forward up to 1.5x the reference's (~1 ms of
harness overhead on cpu/relu), which hid the whole ~0.4 ms ReLU; once the charge was the judge's clock minus the
reference's usual overhead, a task under the wider clocks' allowance (a cpu/ task's ~7 us ReLU on a GPU) still
hid it. The harness now runs each call with the collector off until the output is copied out: the callback
fills the returned tensor after the copy, and the judge sees what torch.empty_like left there.
today: wrong_output values (cpu/relu)

task: cpu/relu
expect: wrong_output values
also: rejected output_replay, wrong_output nonfinite
"""
import gc

import torch
import torch.nn as nn

_pending = []          # (input, output) left for the callback
_threshold = gc.get_threshold()


def _finish(phase, info):
    if phase == "start" and _pending:
        x, out = _pending.pop()
        gc.set_threshold(*_threshold)
        torch.clamp_min(x, 0.0, out=out)


gc.callbacks.append(_finish)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending.append((x, out))
        gc.set_threshold(1)  # the next allocation of a tracked object collects: that is in the harness
        return out
