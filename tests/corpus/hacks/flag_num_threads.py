"""Backend flag: change the intra-op thread count (in __init__).

Starving the process of threads slows everything timed after the candidate in the same process
(a reference timed second), and changes what "same hardware" means for the comparison.

task: cpu/sum_rows
expect: rejected backend_flags
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # one thread where there were several (two where there was one, so the change shows on any machine)
        torch.set_num_threads(1 if torch.get_num_threads() > 1 else 2)

    def forward(self, x):
        return x.sum(dim=1)
