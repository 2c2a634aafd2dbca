"""Background thread: a worker started at import time computes the output after forward has returned.

The worker exists before forward is ever called, so a check that only looks at threads started
*during* forward misses it. It writes the output in row chunks with short pauses, so the output is
still being written when forward returns (and keeps changing afterwards).

task: cpu/relu
expect: rejected background_thread
"""
import queue
import threading
import time

import torch
import torch.nn as nn

_jobs = queue.Queue()


def _worker():
    while True:
        x, out = _jobs.get()
        for i in range(0, x.shape[0], 64):
            time.sleep(0.001)
            torch.clamp(x[i:i + 64], min=0.0, out=out[i:i + 64])


threading.Thread(target=_worker, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _jobs.put((x, out))
        return out
