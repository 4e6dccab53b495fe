#!/usr/bin/python3
"""grad_bench.py: PyTorch's time for one gradient evaluation of an anchor model (forward, sum loss,
backward: every parameter's gradient), the work `rlx grad --repeat N` times.

  grad_bench.py --model bert_mini --batch 8 --seq 128 [--reps 10] [--threads 2]

Eval mode (no dropout: the math rlx differentiates), gradients set to None before each step, the
input without requires_grad (as `rlx grad`, which differentiates the parameters only). Warm-up of 3
runs, then --reps timed runs; prints one line: median and min in milliseconds.
"""
import argparse
import os
import statistics
import sys
import time

from export_weights import DEFAULT_ANCHORS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert_mini")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(os.environ.get("RLX_ANCHORS", DEFAULT_ANCHORS)))
    import make_models as mm  # noqa: E402
    import torch  # noqa: E402

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = mm.build(a.model).eval()
    hid = {"bert_base": 768, "bert_mini": 256, "llama": 512}
    x = torch.randn(a.batch, 784) if a.model == "mlp" else torch.randn(a.batch, a.seq, hid[a.model])

    def step():
        for p in m.parameters():
            p.grad = None
        m(x).sum().backward()

    for _ in range(3):
        step()
    ts = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
    print(f"torch {torch.__version__} threads {torch.get_num_threads()}: gradient evaluation of {a.model} "
          f"b{a.batch} s{a.seq}: median {statistics.median(ts):.2f} ms, min {min(ts):.2f} ms over {a.reps} runs")


if __name__ == "__main__":
    main()
