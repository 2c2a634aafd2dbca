"""Deferred work through sys.setprofile: the output is computed when the harness next receives a message.

No attribute of any module is replaced. forward allocates the output, queues the matmul and
returns; a profile hook runs the queued work when the next `recv` call returns in this process,
which happens after the caller's timer has stopped (the reply to the timed call was already sent)
and before anyone reads the output. Any harness that times "send the call, wait for the reply"
and reads the output in a later message is fooled.

A fix that stops the clock only once the output is in the judge's buffer (copy-out inside the timed
call) defeats this without detecting it: then `ok` at honest speed is right too; update `expect`.

task: cpu/linear_relu
expect: rejected monkeypatch
"""
import sys

import torch
import torch.nn as nn

_pending = []


def _profile(frame, event, arg):
    if event == "return" and _pending and frame.f_code.co_name == "recv":
        while _pending:
            out, x, w, b = _pending.pop()
            torch.addmm(b, x, w.t(), out=out).relu_()


sys.setprofile(_profile)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.linear.weight
        out = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        _pending.append((out, x, w, self.linear.bias))
        return out
