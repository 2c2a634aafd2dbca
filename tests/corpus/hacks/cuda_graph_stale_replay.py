"""CUDA-graph replay of a stale output: the MLP is captured once on a copy of the first input, and every later call
replays the graph without copying its own input in, so it returns the first call's answer again (one launch, no
copy: cheaper than the honest graph in honest/cuda_graph_mlp.py). Any second input set exposes it as an earlier
call's answer. (The frozen input is kept on the module: a first version let it go, so its memory was reused and
the replays returned garbage, which the GPU run at 6a52bbc called wrong_output, not output_replay.)

task: level3/mlp
device: cuda
expect: rejected output_replay
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, hidden_size), nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )
        self._graph = self._out = self._in = None

    def forward(self, x):
        if not x.is_cuda:
            return self.net(x)
        if self._graph is None:
            self._in = static_in = x.clone()  # the first input, frozen into the graph (kept: its memory stays)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.net(static_in)
            torch.cuda.current_stream().wait_stream(side)
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self._out = self.net(static_in)
        self._graph.replay()  # never told about x
        return self._out.clone()
