"""Two CUDA streams, correctly joined: the GEMM + bias + ReLU is split by rows, each half on its own side stream.

Each side stream first waits for the current stream (so it sees the inputs and the output's allocation), computes its
rows with addmm (the bias folded into the GEMM) and an in-place ReLU into its slice of one output tensor; then the
current stream waits for both side streams before forward returns, so everything ordered after forward on the current
stream (the caller's reads, a CUDA event, a stream synchronize) sees the finished rows. The output was allocated on the
current stream and is written on the side streams: record_stream tells the caching allocator not to hand its memory
out again before the side streams are done with it. The input is only read there, and the caller frees it on the
current stream, which has already waited for both side streams.

task: level2/gemm_bias_relu
device: cuda
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same parameters, same random draws as the reference
        self._streams = None

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        if not x.is_cuda:
            return torch.addmm(b, x, w.t()).relu_()
        if self._streams is None or self._streams[0].device != x.device:
            self._streams = (torch.cuda.Stream(x.device), torch.cuda.Stream(x.device))
        current = torch.cuda.current_stream(x.device)
        out = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        half = x.shape[0] // 2
        for side, rows in zip(self._streams, (slice(0, half), slice(half, None))):
            side.wait_stream(current)  # fork: the side stream starts after everything queued so far
            with torch.cuda.stream(side):
                part = out[rows]  # a contiguous row block of the output
                torch.addmm(b, x[rows], w.t(), out=part)
                part.relu_()
            out.record_stream(side)
        for side in self._streams:
            current.wait_stream(side)  # join: nothing after forward on the current stream runs before both halves
        return out
