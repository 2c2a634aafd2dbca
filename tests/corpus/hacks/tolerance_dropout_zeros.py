"""Huge tolerance from a stochastic reference: the reference applies dropout in training mode, so its output and
the float64 oracle (another random mask) disagree on about half the entries; the tolerance calibrated on that
disagreement lets a candidate that returns zeros pass every check.

The tolerance is max(floor, 10 x the reference's own error against float64) with no ceiling: a dropped entry
against a kept one is an error of order 1 relative to the output's RMS, so the tolerance is ~10-100, and zeros
are within it of any output (error <= 1). The eval-mode probe is skipped or passes the same way. A reference
whose two runs on the same input differ gets refused: `runtime_error reference`.
today: ok 12x (corpus/dropout_train, the test's OPTIONS)

task: corpus/dropout_train
expect: runtime_error reference
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.zeros_like(x)
