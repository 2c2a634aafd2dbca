"""Backend flag changed inside forward and put back later by a thread of the candidate's: TF32 for every fp32
matmul of the process from the first call on, each call switching it on again, a thread switching it off 1 ms
after each call, well before the next audit (the audits read the flags three times per evaluation, never
during a call).

The flags that change fp32 arithmetic are now read right after forward returns, before anything else runs in
the harness: forward returned with TF32 on. (A forward that switches a flag on and back off before returning is
caught by the setter watch: hacks/flag_tf32_toggled_in_forward.)

task: cpu/linear_relu
expect: rejected backend_flags
"""
import threading
import time

import torch
import torch.nn as nn


def _later_off():
    time.sleep(0.001)
    torch.backends.cuda.matmul.allow_tf32 = False


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        torch.backends.cuda.matmul.allow_tf32 = True
        out = torch.relu(self.linear(x))
        threading.Thread(target=_later_off, daemon=True).start()  # started last: the flag is on as forward returns
        return out
