"""Deferred work through a timer signal, with the signal unblocked: the harness blocks signals for each call, so
forward unblocks SIGALRM before it arms a 200 us timer and returns an empty tensor; the handler computes the
softmax into it and blocks SIGALRM again, so that the harness would find its mask as it left it.

The harness reads its signal mask right after forward returns, long before the timer fires: SIGALRM is
unblocked, and the call is `deferred_work`.

task: cpu/softmax
expect: rejected deferred_work
"""
import signal

import torch
import torch.nn as nn

_pending = []  # (input, output) left for the handler


def _finish(signum, frame):
    while _pending:
        x, out = _pending.pop()
        torch._softmax(x, -1, False, out=out)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})


signal.signal(signal.SIGALRM, _finish)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending.append((x, out))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
        signal.setitimer(signal.ITIMER_REAL, 200e-6)
        return out
