"""TF32 switched on by a thread of the candidate's while forward runs, and off again before forward returns: forward
wakes a helper thread (started at import), which turns the flag on and signals back; forward computes, then waits
for the helper to turn it off. No setting changes in forward's own frames, and none is left changed at the return.

Caught by the setter watch (fences.FlagWatch), which sees setters called from any thread: `backend_flags`.
today: ok ~1x on the CPU before the watch

task: cpu/linear_relu
expect: rejected backend_flags
"""
import threading

import torch
import torch.nn as nn

_on, _ready, _off, _done = (threading.Event() for _ in range(4))


def _helper():
    while True:
        _on.wait()
        _on.clear()
        torch.backends.cuda.matmul.allow_tf32 = True
        _ready.set()
        _off.wait()
        _off.clear()
        torch.backends.cuda.matmul.allow_tf32 = False
        _done.set()


threading.Thread(target=_helper, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _on.set()
        _ready.wait(5)
        _ready.clear()
        out = torch.relu(self.linear(x))
        _off.set()
        _done.wait(5)
        _done.clear()
        return out
