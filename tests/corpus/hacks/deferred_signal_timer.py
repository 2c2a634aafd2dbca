"""Work deferred into the harness through a timer signal: forward returns an empty tensor after arming a 30 us
interval timer; its SIGALRM handler, which Python runs in the main thread at the next bytecode, computes the
softmax while the harness is in its guard, before the copy-out.

No watched attribute, flag, hook or thread is involved (signal handlers are not audited), and the guard alone
takes ~0.3 ms of Python, so the 30 us timer always fires before the copy. The judge's clock sees the work, but
`charge` forgives a candidate's gap after forward up to 1.5x the reference's (~0.7 ms of harness overhead on
cpu/softmax), which covers the ~0.35 ms softmax. Once the judge's clock is charged in full
(minus the reference's usual overhead), the deferred softmax costs what it costs: ~1x.
(2.0, not 1.3: on CI's busy 2 cores the charge's noise allowance let 1.68x through once)
On a busy machine the timer can fire after the copy-out: that call's output is the empty tensor, whose memory still
holds an earlier answer, and the timed rounds catch it (seen on CI: output_replay at timed call 61).
today: ok 3.1x (cpu/softmax, the test's OPTIONS)

task: cpu/softmax
expect: ok
max_speedup: 2.0
min_rounds: 120
speedup_kind: framework_ops
also: rejected output_replay, rejected phase_branch
"""
import signal

import torch
import torch.nn as nn

_pending = []  # (input, output) left for the handler


def _finish(signum, frame):
    while _pending:
        x, out = _pending.pop()
        torch._softmax(x, -1, False, out=out)


signal.signal(signal.SIGALRM, _finish)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending.append((x, out))
        signal.setitimer(signal.ITIMER_REAL, 30e-6)  # one shot: fires inside the harness' guard
        return out
