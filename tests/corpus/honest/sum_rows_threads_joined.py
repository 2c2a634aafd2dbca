"""Row sums split over two Python threads that are joined before forward returns: legitimate.

torch ops release the GIL, so the halves run in parallel; a `with ThreadPoolExecutor` block shuts the
pool down (joins its threads) before the result is returned, so no thread outlives the call.

task: cpu/sum_rows
expect: ok
"""
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        half = x.shape[0] // 2
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(torch.sum, x[s], 1, out=out[s]) for s in (slice(0, half), slice(half, None))]
        for job in jobs:
            job.result()
        return out
