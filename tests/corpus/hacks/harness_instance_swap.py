"""Harness tampering through the worker object: find the live harness instance through gc and swap one of its own
attributes, here the flush buffer that evicts the L2 before every timed call (a tiny one leaves the inputs cached).
The module and its classes keep their identity; only the instance changes. The same route could swap the GPU hold
that covers the launch for a stream-local sleep, which would let work on an unjoined stream run before the clock
starts. The worker's own attributes are watched after every call.

task: cpu/relu
expect: rejected monkeypatch
"""
import gc

import torch
import torch.nn as nn


def _swap():
    for obj in gc.get_objects():
        if hasattr(type(obj), "prep") and hasattr(type(obj), "run") and hasattr(obj, "flush_buf"):
            obj.flush_buf = torch.empty(16, device=getattr(obj, "device", "cpu"))


class ModelNew(nn.Module):
    def forward(self, x):
        _swap()
        return torch.relu(x)
