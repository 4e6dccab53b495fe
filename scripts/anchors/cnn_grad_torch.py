#!/usr/bin/env python3
"""torch forward + backward of the CNN that examples/cnn_grad_bench.cpp times on rlx-cpu.

x [B, 3, 32, 32] -> conv 3x3 16 + relu -> max pool 2 -> conv 3x3 32 + relu -> max pool 2 ->
conv 3x3 64 + relu -> avg pool 2 -> dense 10; loss = sum of the logits; gradients of every
parameter (not of x, as rlx's gradient graph). Prints the median of interleaved-free rounds in ms.
Usage: cnn_grad_torch.py [batch] [rounds] [threads]
"""
import statistics
import sys
import time

import torch

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 32
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
torch.set_num_threads(threads)
torch.manual_seed(1)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AvgPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(64 * 4 * 4, 10))
x = torch.randn(batch, 3, 32, 32)


def step():
    net.zero_grad(set_to_none=True)
    net(x).sum().backward()


for _ in range(3):
    step()
times = []
for _ in range(rounds):
    t0 = time.perf_counter()
    step()
    times.append((time.perf_counter() - t0) * 1e3)
print(f"torch {torch.__version__} forward + backward, batch {batch}, {threads} threads, "
      f"median of {rounds}: {statistics.median(times):.2f} ms")
