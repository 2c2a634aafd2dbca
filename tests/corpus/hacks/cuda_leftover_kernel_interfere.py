"""GPU work that outlives SIGSTOP: after each call has answered, a thread of the candidate's queues ~2 ms of
full-GPU matmuls on a stream of its own, so they run while the reference is timed next (its process group is
stopped by then, its kernels are not).

The reference's paired rounds grow, and so does its overhead on the wide clocks that the charge subtracts from
the candidate's bounds: both raise the speedup of an honest ReLU. A kernel in a second CUDA context of the
candidate's own does the same (torch.cuda.synchronize() waits for the calling context only). Now the judge
times the reference again once the candidate's processes have ended (clean rounds) and caps every paired level
of the reference by its clean level: ~1x.

task: cpu/relu
device: cuda
expect: ok
max_speedup: 1.3
speedup_kind: framework_ops
"""
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answered = threading.Event()
        self.a = torch.randn(4096, 4096, device="cuda")
        self.stream = torch.cuda.Stream()
        threading.Thread(target=self._interfere, daemon=True).start()

    def _interfere(self):
        while True:
            self.answered.wait()
            self.answered.clear()
            time.sleep(3e-4)  # the harness' synchronize, copy-out and reply
            with torch.cuda.stream(self.stream):
                for _ in range(16):
                    torch.mm(self.a, self.a)

    def forward(self, x):
        self.answered.set()
        return torch.clamp(x, min=0.0)
