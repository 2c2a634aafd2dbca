"""Harness tampering through the worker object, at import: the module finds the live harness instance through gc
while it is being imported and shrinks its flush buffer before any call (the per-call guard's snapshot of the
worker's own attributes is taken when the harness sets them, before candidate code runs, so this is seen at the
first call).

task: cpu/relu
expect: rejected monkeypatch
"""
import gc

import torch
import torch.nn as nn

for _obj in gc.get_objects():
    if hasattr(type(_obj), "prep") and hasattr(type(_obj), "run") and hasattr(_obj, "flush_buf"):
        _obj.flush_buf = torch.empty(16, device=getattr(_obj, "device", "cpu"))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
