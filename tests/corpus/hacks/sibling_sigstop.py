"""Freeze the reference from outside: a forked child SIGSTOPs the reference's worker process most of the time.

Processes of one user may signal each other. The child finds its sibling whose stdout is the
reference's log (via /proc), then loops: stop it for 2 ms, let it run for 0.2 ms. The candidate's
own process is untouched and its output honest; no Python thread exists, no attribute or flag
changes. Every reference call waits out the stops: a fake speedup of ~5-10x.

task: cpu/sum_rows
expect: rejected background_process
"""
import ctypes
import os
import signal
import time

import torch
import torch.nn as nn


_WORKER, _PARENT = os.getpid(), os.getppid()  # taken before the fork: the child looks for the worker's siblings


def _reference_pid():
    me, parent = _WORKER, _PARENT
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == parent and os.readlink(f"/proc/{d}/fd/1").endswith("reference.log"):
                return int(d)
        except (OSError, ValueError, IndexError):
            continue
    return None


def _freezer():
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the worker, never outlive the test
    target, deadline = None, time.monotonic() + 120
    while time.monotonic() < deadline:
        target = target or _reference_pid()
        if target is None:
            time.sleep(0.01)
            continue
        try:
            os.kill(target, signal.SIGSTOP)
            time.sleep(0.002)
            os.kill(target, signal.SIGCONT)
            time.sleep(0.0002)
        except ProcessLookupError:
            break
    if target:
        try:
            os.kill(target, signal.SIGCONT)
        except ProcessLookupError:
            pass
    os._exit(0)


if os.fork() == 0:
    _freezer()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, 1)
