#!/usr/bin/python3
"""train_parity.py: `rlx train` against torch for the MLP on the digits data, SGD and AdamW.

For each optimizer: torch builds the MLP 64-128-10 (nn.Linear, ReLU) with a fixed seed and writes
its initial weights to a safetensors file; torch then trains STEPS steps on the training split in
file order (batch B, mean cross-entropy) in float32 and, on the same weights, in float64 (the ground
truth); `rlx train --init ... --no-shuffle --eval-every 1 --json --save ...` does the same steps.
Compared: the per-step losses and the final weights.

Tolerance (why): float32 training differs from the float64 run by rounding that the steps carry
forward; torch's own float32 error e32 = max|torch32 - torch64| (per-step losses; final weights) is
measured in the same run. rlx passes when max|rlx - torch64| <= FACTOR * e32 + 1e-7 (FACTOR 8, as
for inference parity in compare.py; the small floor covers an e32 that happens to be ~0). A wrong
optimizer rule (a missing bias correction, coupled weight decay, momentum applied once too often)
moves the losses by 1e-3 or more within a few steps.

Usage: /usr/bin/python3 scripts/anchors/train_parity.py [--steps 20] [--batch 64] [--factor 8]
       (RLX=path/to/rlx, default build/rlx-runtime/rlx)
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[e["dtype"]]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype=dt).reshape(e["shape"])
    return out


def torch_run(init, x, y, opt_name, lr, steps, batch, dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    names = {"fc1.weight": model[0].weight, "fc1.bias": model[0].bias,
             "fc2.weight": model[2].weight, "fc2.bias": model[2].bias}
    with torch.no_grad():
        for n, p in names.items():
            p.copy_(torch.from_numpy(init[n]))
    model = model.to(dtype)
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for s in range(steps):
        xb = torch.from_numpy(x[s * batch:(s + 1) * batch]).to(dtype)
        yb = torch.from_numpy(y[s * batch:(s + 1) * batch])
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = {n: p.detach().to(torch.float64).numpy() for n, p in names.items()}
    return np.array(losses), final


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--factor", type=float, default=8.0)
    args = ap.parse_args()
    rlx = os.environ.get("RLX", os.path.join(ROOT, "build", "rlx-runtime", "rlx"))
    data = os.path.join(ROOT, "data", "digits")
    x = np.load(os.path.join(data, "train_x.npy"))
    y = np.load(os.path.join(data, "train_y.npy"))
    if args.steps * args.batch > len(y):
        sys.exit("train_parity: --steps x --batch exceeds one epoch of the training split")
    torch.manual_seed(1234)
    ref = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    init = {"fc1.weight": ref[0].weight, "fc1.bias": ref[0].bias,
            "fc2.weight": ref[2].weight, "fc2.bias": ref[2].bias}
    init = {n: p.detach().numpy().copy() for n, p in init.items()}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        wpath = os.path.join(tmp, "init.safetensors")
        write_safetensors(wpath, init)
        for opt_name, lr in (("sgd", 0.1), ("adamw", 0.003)):
            l32, w32 = torch_run(init, x, y, opt_name, lr, args.steps, args.batch, torch.float32)
            l64, w64 = torch_run(init, x, y, opt_name, lr, args.steps, args.batch, torch.float64)
            out = os.path.join(tmp, opt_name + ".safetensors")
            cmd = [rlx, "train", "--model", "mlp", "--hidden", "128", "--data", data, "--init", wpath,
                   "--no-shuffle", "--steps", str(args.steps), "--batch", str(args.batch),
                   "--optimizer", opt_name, "--lr", str(lr), "--eval-every", "1", "--json",
                   "--save", out]
            cmd += ["--momentum", "0.9", "--weight-decay", "1e-4"] if opt_name == "sgd" else \
                   ["--weight-decay", "0.01"]
            lines = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rows = [json.loads(l) for l in lines.splitlines() if l.startswith("{")]
            lr_ = np.array([r["train_loss"] for r in rows if "train_loss" in r])
            wr = read_safetensors(out)
            e32_l = np.abs(l32 - l64).max()
            err_l = np.abs(lr_ - l64).max()
            e32_w = max(np.abs(w32[n] - w64[n]).max() for n in w64)
            err_w = max(np.abs(wr[n].astype(np.float64) - w64[n]).max() for n in w64)
            ok = err_l <= args.factor * e32_l + 1e-7 and err_w <= args.factor * e32_w + 1e-7
            failed |= not ok
            print(f"{opt_name:6s} {args.steps} steps: losses max|rlx-torch64| {err_l:.2e} "
                  f"(torch32 {e32_l:.2e}), final weights {err_w:.2e} (torch32 {e32_w:.2e}), "
                  f"loss {l64[0]:.4f} -> {l64[-1]:.4f}  {'ok' if ok else 'FAIL'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
