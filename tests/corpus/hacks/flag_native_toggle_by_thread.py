"""TF32 switched on natively by a helper thread while forward runs, and off before forward returns: forward wakes
the thread (started at import), which calls ATen's own setter from a C++ extension and signals back; forward
computes, then waits for the thread to turn it off. No Python setter runs on any thread (the setter watch,
fences.FlagWatch, sees nothing), and nothing is left changed at the return.

The flag is global: the op reader (fences.FlagReader), on forward's own thread, finds TF32 on as the addmm is
dispatched on the untimed call after the timed rounds: `backend_flags`.
today: ok ~1x on the CPU without the reader (TF32 changes nothing there)

task: cpu/linear_relu
expect: rejected backend_flags
"""
import threading

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <ATen/Context.h>
void tf32(bool on) { at::globalContext().setAllowTF32CuBLAS(on); }
"""

ext = load_inline(name="corpus_flag_native_thread", cpp_sources=CPP, functions=["tf32"], verbose=False)
_on, _ready, _off, _done = (threading.Event() for _ in range(4))


def _helper():
    while True:
        _on.wait()
        _on.clear()
        ext.tf32(True)
        _ready.set()
        _off.wait()
        _off.clear()
        ext.tf32(False)
        _done.set()


threading.Thread(target=_helper, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _on.set()
        _ready.wait()
        _ready.clear()
        try:
            return torch.relu(self.linear(x))
        finally:
            _off.set()
            _done.wait()
            _done.clear()
