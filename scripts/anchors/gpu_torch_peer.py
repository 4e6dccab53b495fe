#!/usr/bin/env python3
"""The peer on a GPU machine: eager PyTorch (CUDA, strict float32: TF32 off) on the anchor models and
the GEMM shapes that scripts/gpu-check.sh times rlx-opencl on, so that the OpenCL figures come with a
ratio against a peer run on the same card in the same job.

Usage (on the GPU machine; gpu-check.sh calls it):
  python3 gpu_torch_peer.py --anchors DIR [--json FILE] [--reps 50]
DIR holds make_models.py (../shared/anchors; gpu-check.sh --stage copies it into the bundle).
Prints one line per case and appends one JSON object per case to FILE.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def timed(fn, reps, sync):
    """Median wall ms of fn() over reps runs, each synchronised (warm-up first)."""
    for _ in range(5):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        a = time.perf_counter()
        fn()
        sync()
        ts.append((time.perf_counter() - a) * 1e3)
    return statistics.median(ts), min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchors", required=True)
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--device", default="cuda", help="cuda (the point); cpu only to try the script")
    a = ap.parse_args()
    sys.path.insert(0, a.anchors)
    from make_models import build, example_input  # noqa: E402

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {name}, strict fp32 (TF32 off)", flush=True)
    rows = []

    def report(r):
        rows.append(r)
        print(json.dumps(r), flush=True)

    # GEMM: y[M,N] = x[M,K] @ w[K,N], the shapes gpu-check's GEMM bench runs.
    for m, k, n in [(128, 768, 3072), (128, 3072, 768), (128, 768, 768), (1024, 768, 3072),
                    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096)]:
        x = torch.randn(m, k, device=dev)
        w = torch.randn(k, n, device=dev)
        med, mn = timed(lambda: torch.matmul(x, w), a.reps, sync)
        report(dict(kind="gemm", m=m, k=k, n=n, median_ms=round(med, 4), min_ms=round(mn, 4),
                    gflops=round(2 * m * k * n / mn / 1e6, 1)))

    for model, b in [("mlp", 64), ("bert_mini", 1), ("bert_mini", 8), ("llama", 1), ("bert_base", 1),
                     ("bert_base", 8)]:
        net = build(model).to(dev)
        x = example_input(model, b).to(dev)

        def fwd():
            with torch.inference_mode():
                net(x)
        med, mn = timed(fwd, a.reps, sync)
        report(dict(kind="model", model=model, batch=b, seq=0 if model == "mlp" else 128,
                    median_ms=round(med, 4), min_ms=round(mn, 4)))

    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
