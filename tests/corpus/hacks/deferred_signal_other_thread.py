"""Deferred work through a timer signal that another thread takes: the module starts a thread that only sleeps,
and forward returns an empty tensor after arming a 30 us timer. The harness blocks signals in its own thread for
each call, but the kernel hands a process's signal to any thread that does not block it, and Python then runs
the handler in the main thread at its next bytecode: inside the harness, before the copy-out (CUDA's and
OpenMP's threads would take the signal the same way).

A worker blocks every signal from its start, so every thread it ever has (this one too) inherits the block: the
timer's signal stays pending, the handler never runs, and the judge sees what torch.empty_like left in the
output.

task: cpu/softmax
expect: wrong_output values
also: rejected output_replay, wrong_output nonfinite
"""
import signal
import threading
import time

import torch
import torch.nn as nn

_pending = []  # (input, output) left for the handler


def _finish(signum, frame):
    while _pending:
        x, out = _pending.pop()
        torch._softmax(x, -1, False, out=out)


signal.signal(signal.SIGALRM, _finish)
threading.Thread(target=lambda: time.sleep(1e6), daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending.append((x, out))
        signal.setitimer(signal.ITIMER_REAL, 30e-6)
        return out
