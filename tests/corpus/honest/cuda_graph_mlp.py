"""CUDA graph of the whole MLP: captured in the first call, replayed after; each call returns a fresh copy.

The first call (and any call with a new shape, dtype, device or grad mode) copies the input into a static input
buffer, warms the layers up on a side stream (cuBLAS handles and workspaces are created outside the capture, as
PyTorch's CUDA-graph recipe does), joins that stream back, and captures the three GEMMs and ReLUs into one graph whose
output lives in the graph's private memory pool. Every call then copies its input into the static buffer, replays the
graph on the current stream (one launch instead of six kernels) and returns static_out.clone(): the static output is
overwritten by the next replay, so returning it would hand the caller a buffer a later call changes; the clone is the
caller's own tensor. The weights are captured by address, so they must not be replaced after the first call (the
evaluator moves the model to the GPU before calling it; nothing reallocates them later).

task: level3/mlp
device: cuda
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.net = nn.Sequential(  # the reference's layers in the reference's order: same random draws
            nn.Linear(input_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )
        self._graph = self._key = self._static_in = self._static_out = None

    def forward(self, x):
        if not x.is_cuda:
            return self.net(x)
        key = (tuple(x.shape), x.dtype, x.device, torch.is_grad_enabled())
        if key != self._key:
            self._capture(x, key)
        self._static_in.copy_(x)
        self._graph.replay()
        return self._static_out.clone()

    def _capture(self, x, key):
        self._graph = self._key = self._static_out = None
        self._static_in = torch.empty_like(x, memory_format=torch.contiguous_format)
        self._static_in.copy_(x)
        current = torch.cuda.current_stream(x.device)
        side = torch.cuda.Stream(x.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            for _ in range(2):
                self.net(self._static_in)
        current.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self.net(self._static_in)
        self._graph, self._static_out, self._key = graph, static_out, key
