#!/usr/bin/python3
"""train_bench.py: training-step time and peak memory of `rlx train` against eager PyTorch, on the
training steps of ../shared/anchors/bench_torch.py: bert_mini b8 s128 (input x [8, 128, 256], MSE
against a random target, plain SGD lr 1e-3) and the mlp 784-512-512-10 b64 (cross-entropy, plain
SGD).

rlx runs `rlx train --graph bert_mini.json --loss mse` (the graph from `rlx export`) and
`rlx train --model mlp --hidden 512,512` on random data written to a temporary folder, with
--eval-every 1 so every step prints its elapsed time; the step time is the median of the
differences after a warm-up of WARM_S seconds (at least WARM steps), so it includes rlx's per-step
host work (batch gathering). The warm-up is by time because on the 2-core VM a process's first
~70 ms of steps run at one core's speed (the MLP step: 3.2-3.9 ms, then 2.0 ms), which a count of
5 steps did not cover for the MLP; both rlx and torch warm up the same way. torch runs the same loop as bench_torch.py in a child process (2 threads, as there).
Rounds alternate rlx and torch (the machine may be loaded); each figure is the median over rounds.
Peak RSS is /usr/bin/time's maximum resident set of each whole process (startup, data, compile).
Also printed: rlx's step arena against the memory planner's lower bound.

Usage: /usr/bin/python3 scripts/anchors/train_bench.py [--rounds 3] [--steps 40] [--only bert_mini,mlp]
                                                      [--torch-threads 2]
       (RLX=path/to/rlx, default build/rlx-runtime/rlx; RLX_ANCHORS=../shared/anchors)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ANCHORS = os.environ.get("RLX_ANCHORS", os.path.join(ROOT, "..", "shared", "anchors"))
WARM = 5
WARM_S = 0.5

TORCH_CHILD = r'''
import json, sys, time, statistics
import torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from make_models import build
model, steps = sys.argv[2], int(sys.argv[3])
torch.set_num_threads(int(sys.argv[4]))
torch.manual_seed(0)
m = build(model).train()
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
if model == "mlp":
    x, tgt = torch.randn(64, 784), torch.randint(0, 10, (64,))
    loss_fn = lambda y: F.cross_entropy(y, tgt)
else:
    x, tgt = torch.randn(8, 128, 256), torch.randn(8, 128, 256)
    loss_fn = lambda y: F.mse_loss(y, tgt)
ts = []
t0 = time.perf_counter()
while len(ts) < %d or time.perf_counter() - t0 < %f:  # warm-up by time, as rlx's
    a = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(m(x))
    loss.backward()
    opt.step()
    ts.append(0)
ts = []
for _ in range(steps):
    a = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(m(x))
    loss.backward()
    opt.step()
    ts.append((time.perf_counter() - a) * 1e3)
print(json.dumps({"step_ms": statistics.median(ts)}))
''' % (WARM, WARM_S)


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (stdout, peak RSS in MiB)."""
    r = subprocess.run(["/usr/bin/time", "-f", "RSS_KB %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"train_bench: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    rss = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("RSS_KB")][-1]
    return r.stdout, rss / 1024


def rlx_round(rlx, args_list):
    out, rss = timed([rlx, "train"] + args_list + ["--eval-every", "1", "--json"])
    rows = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    el = [r["elapsed_ms"] for r in rows if "elapsed_ms" in r]
    diffs = [b - a for a, b in zip(el, el[1:])]
    warm = WARM
    while warm < len(diffs) and sum(diffs[:warm]) < WARM_S * 1e3:
        warm += 1
    if len(diffs) - warm < 10:
        sys.exit(f"train_bench: {len(diffs) - warm} steps after the warm-up; give more --steps")
    return statistics.median(diffs[warm:]), rss, rows[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--only", default="bert_mini,mlp")
    ap.add_argument("--torch-threads", type=int, default=2,
                    help="torch threads (2 as bench_torch.py; on a loaded machine 1 avoids its "
                         "OpenMP threads spinning against other processes)")
    a = ap.parse_args()
    rlx = os.environ.get("RLX", os.path.join(ROOT, "build", "rlx-runtime", "rlx"))
    rng = np.random.RandomState(0)
    with tempfile.TemporaryDirectory() as tmp:
        cases = {}
        if "bert_mini" in a.only:
            g = os.path.join(tmp, "bert_mini.json")
            subprocess.run([rlx, "export", "--model", "bert", "--layers", "4", "--hidden", "256",
                            "--heads", "4", "--ffn", "1024", "-o", g], check=True,
                           capture_output=True)
            d = os.path.join(tmp, "bert")
            os.makedirs(d)
            np.save(os.path.join(d, "train_x.npy"), rng.randn(8, 128, 256).astype(np.float32))
            np.save(os.path.join(d, "train_target.npy"), rng.randn(8, 128, 256).astype(np.float32))
            cases["bert_mini"] = ["--graph", g, "--loss", "mse", "--data", d, "--batch", "8",
                                  "--seq", "128"]
        if "mlp" in a.only:
            d = os.path.join(tmp, "mlp")
            os.makedirs(d)
            np.save(os.path.join(d, "train_x.npy"), rng.randn(64, 784).astype(np.float32))
            np.save(os.path.join(d, "train_y.npy"), rng.randint(0, 10, 64).astype(np.int64))
            cases["mlp"] = ["--model", "mlp", "--hidden", "512,512", "--data", d, "--batch", "64"]
        for name, case in cases.items():
            # rlx runs --steps measured steps after its warm-up (WARM_S of steps: ~250 of the
            # MLP's, WARM of bert_mini's)
            warm_steps = 300 if name == "mlp" else 2 * WARM
            common = case + ["--optimizer", "sgd", "--momentum", "0", "--lr", "1e-3", "--steps",
                             str(a.steps + warm_steps)]
            rl, tl, rr, tr = [], [], [], []
            last = None
            for _ in range(a.rounds):
                ms, rss, last = rlx_round(rlx, common)
                rl.append(ms)
                rr.append(rss)
                out, rss = timed([sys.executable, "-c", TORCH_CHILD, ANCHORS, name, str(a.steps),
                                  str(a.torch_threads)])
                tl.append(json.loads(out.strip().splitlines()[-1])["step_ms"])
                tr.append(rss)
            r, t = statistics.median(rl), statistics.median(tl)
            print(f"{name:9s} train step  rlx {r:8.3f} ms  torch {t:8.3f} ms  torch/rlx {t / r:5.2f}x"
                  f"   peak RSS rlx {statistics.median(rr):6.0f} MiB  torch "
                  f"{statistics.median(tr):6.0f} MiB   (rounds: rlx {[round(v, 2) for v in rl]}, "
                  f"torch {[round(v, 2) for v in tl]})")
            if last and "step_arena_bytes" in last:
                print(f"{'':9s} rlx step arena {last['step_arena_bytes'] / 2**20:.2f} MiB, planner "
                      f"lower bound {last['step_lower_bound_bytes'] / 2**20:.2f} MiB, pinned "
                      f"{last['step_pinned_bytes'] / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
