"""Free time in the hold's window: while the 0.5 ms GPU hold of a call runs (it holds the SMs, not the copy
engines, and its time is on no clock), copy the input to the host on a side stream, compute the ReLU on the CPU,
copy the answer back on the side stream and join it to the current stream, which finds it done when the hold
ends.

The precise clock (events after the hold) saw nothing, and the wider clocks leave the hold out on both sides:
a large fake speedup. Now the host clock charges the CPU time forward's thread spent in forward and every other
thread in the call (charge): the copies' staging and the CPU's ReLU cost ~0.1-0.3 ms against the reference's
7 us kernel. (The copies themselves stay free: copy-engine time within the hold is still on no clock.)

task: cpu/relu
device: cuda
expect: ok
max_speedup: 1.0
speedup_kind: framework_ops
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x):
        current = torch.cuda.current_stream()
        with torch.cuda.stream(self.side):
            host = x.to("cpu")  # the copy engine works while the hold holds the SMs
            out = torch.relu(host).to(x.device)
        current.wait_stream(self.side)
        out.record_stream(current)
        return out
