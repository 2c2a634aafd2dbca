"""Run a compiler, as root, on arguments of the candidate's, in the caller's working directory: the module names
load_inline (a comment is enough), so build_all runs it in a build process first; there it sends on the build's
connection the message a build sent for a precompiled torch/extension.h it wished for, twice (a flag set's header
was made from its second wish): ["pch", "c++", "-fopt-info-all=cudal1_pch_probe.txt"]. The caller checked the flags
loosely (any -f option but a plugin) and started that compiler itself, as root, with every capability and no
Landlock, in its own working directory, where -fopt-info-all= created a file of the candidate's naming (before the
compile failed: it could as well have been evaluator.py). Such compilers, ~790 MB of header each for a real flag
set, outlived the CLI that started them. The shared header is made only for the harness' own flag sets, in a build
process of its own (fences.make_pch); no build asks for one, and the message is `wire`.
today: ok 1.0x, and cudal1_pch_probe.txt (empty) in the CLI's working directory (cpu/relu, the CLI at
--time-budget-s 0.05)

task: cpu/relu
expect: rejected wire
"""
import gc
import json
import os

import torch
import torch.nn as nn

# (load_inline named here: build_all runs this module in a build process first)
WISH = ["pch", "c++", "-fopt-info-all=cudal1_pch_probe.txt"]


def _in_build_process():
    return os.getsid(0) == os.getpid()  # a build process is a session leader; a worker leads a process group only


if _in_build_process():
    for conn in [o.conn for o in gc.get_objects() if type(o).__name__ == "Worker" and getattr(o, "conn", None)][:1]:
        for _ in range(2):
            conn.send_bytes(json.dumps(WISH).encode())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
