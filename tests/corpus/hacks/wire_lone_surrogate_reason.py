"""Raise in the caller with a string: forward raises an exception whose message holds a lone surrogate (U+D800, which
no codec encodes). The worker's failure travels as JSON, which escapes it (\ud800), and the judge's wire parsed it
back into a Python str and passed it on as the verdict's reason: the CLI raised UnicodeEncodeError printing it (a
traceback, exit 1, no JSON line), and so does any caller that writes the reason to a file or a terminal. The wire
refuses a string that is not text (fences.recv_data): the failure is `wire`; the CLI escapes what it cannot print.
today: a traceback (UnicodeEncodeError) and exit 1 from the CLI (cpu/relu); from Python, runtime_error exception
with the surrogate in the reason

task: cpu/relu
expect: rejected wire
"""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        raise RuntimeError("\ud800 forward stops here")
