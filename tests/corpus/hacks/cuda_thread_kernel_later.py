"""Background thread on GPU: forward returns an empty tensor; a Python thread launches the kernel 5 ms later.

Nothing is enqueued on any stream when forward returns, so even a device-wide synchronize right
after the call does not wait for the work.

task: cpu/relu
device: cuda
expect: rejected background_thread
"""
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)

        def later():
            time.sleep(0.005)
            torch.clamp(x, min=0.0, out=out)

        threading.Thread(target=later, daemon=True).start()
        return out
