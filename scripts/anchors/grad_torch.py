#!/usr/bin/python3
"""grad_torch.py: torch autograd gradients of the anchor models, and their comparison with `rlx grad`.

  grad_torch.py torch DIR --models a,b --loss sum|mse
      For each model NAME, with DIR/NAME.safetensors and DIR/NAME.x.npy written by export_weights.py
      (the same weights and input), computes the loss (sum of the output, or mean squared error
      against a seeded normal target written as DIR/NAME.target.npy) and its gradient with respect to
      every parameter twice: in float32 (DIR/NAME.g32.safetensors) and in float64, the ground truth
      (DIR/NAME.g64.safetensors); "loss" is stored next to the gradients, names are rlx's.
  grad_torch.py compare DIR --models a,b [--factor 8] [--json FILE]
      Reads DIR/NAME.rlx.safetensors (`rlx grad --out`) and prints, per parameter tensor, the max
      abs error and max relative error of rlx and of torch float32 against the float64 gradient.

Tolerance (why): as compare.py for outputs. Two correct float32 implementations differ from the
float64 gradient by rounding only, and by a similar amount; torch's own float32 error is measured in
the same run. Per tensor, errors are normalised by the tensor's max |g64| (a gradient's entries span
many magnitudes, so elementwise relative error is dominated by entries that are zero up to
rounding; a tensor whose whole gradient is zero in exact arithmetic, like BERT's key bias, is
normalised by 1e-3 x the model's median gradient scale instead). rlx passes a tensor when its normalised error <= FACTOR x torch's normalised error on the
same model, taken as the larger of torch's error on that tensor and the median of torch's error over
the model's tensors (one tensor where torch happens to round luckily must not set a bar no float32
implementation meets). A wrong rule (a missing scale, a transposed weight, a wrong norm eps) is off
by 1e-2 .. 1, far past either.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_weights import DEFAULT_ANCHORS, read_safetensors, rlx_name, write_safetensors  # noqa: E402


def torch_grads(a):
    anchors = os.path.abspath(os.environ.get("RLX_ANCHORS", DEFAULT_ANCHORS))
    sys.path.insert(0, anchors)
    import make_models as mm  # noqa: E402
    import torch  # noqa: E402

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in a.models.split(","):
        weights, _ = read_safetensors(os.path.join(a.dir, f"{name}.safetensors"))
        x = np.load(os.path.join(a.dir, f"{name}.x.npy"))
        model = mm.build(name)
        target = None
        for dtype, suffix in ((torch.float32, "g32"), (torch.float64, "g64")):
            m = model.to(dtype)
            with torch.no_grad():  # the exported weights, exactly (also after --perturb-norms)
                for k, p in m.named_parameters():
                    p.copy_(torch.from_numpy(weights[rlx_name(name, k)].astype(np.float64)))
            y = m(torch.from_numpy(x.astype(np.float64)).to(dtype))
            if a.loss == "sum":
                loss = y.sum()
            else:
                if target is None:
                    g = np.random.default_rng(7)
                    target = g.standard_normal(tuple(y.shape)).astype(np.float32)
                    np.save(os.path.join(a.dir, f"{name}.target.npy"), target)
                loss = torch.nn.functional.mse_loss(y, torch.from_numpy(target).to(dtype))
            params = list(m.named_parameters())
            grads = torch.autograd.grad(loss, [p for _, p in params])
            out = {rlx_name(name, k): gr.detach().numpy().astype("<f4" if suffix == "g32" else "<f8")
                   for (k, _), gr in zip(params, grads)}
            out["loss"] = np.array(loss.item(), dtype="<f4" if suffix == "g32" else "<f8")
            write_safetensors(os.path.join(a.dir, f"{name}.{suffix}.safetensors"), out)
        print(f"{name}: torch gradients of {len(out) - 1} tensors, loss {a.loss} = {out['loss']:.6g}")


def errors(got, ref, floor=0.0):
    """(max abs error, normalised error = max abs / max(max|ref|, floor), max relative error over
    |ref| >= 1e-2 max|ref|)."""
    d = np.abs(got.astype(np.float64) - ref)
    scale = max(float(np.abs(ref).max()), floor)
    big = np.abs(ref) >= 1e-2 * scale
    rel = float((d[big] / np.abs(ref[big])).max()) if big.any() else 0.0
    return float(d.max()), float(d.max()) / scale if scale > 0 else float(d.max()), rel


def compare(a):
    ok, rows = True, []
    print(f"\n### gradient parity, loss {a.loss}: per parameter tensor, against torch float64 autograd; "
          f"err = max abs / max|g64|; tolerance {a.factor:g} x torch float32's err\n")
    print("| model | tensor | max abs rlx | max rel rlx | err rlx | err torch32 | bar | result |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in a.models.split(","):
        g64, _ = read_safetensors(os.path.join(a.dir, f"{name}.g64.safetensors"))
        g32, _ = read_safetensors(os.path.join(a.dir, f"{name}.g32.safetensors"))
        path = os.path.join(a.dir, f"{name}.rlx.safetensors")
        if not os.path.exists(path):
            print(f"| {name} | - | - | - | - | - | - | FAIL: no rlx gradients |")
            ok = False
            continue
        rlx, _ = read_safetensors(path)
        if set(rlx) != set(g64):
            print(f"| {name} | - | - | - | - | - | - | FAIL: names differ: "
                  f"{sorted(set(rlx) ^ set(g64))[:4]} |")
            ok = False
            continue
        # The loss is a scalar; export_weights.write_safetensors stores 0-d arrays as [1].
        for t in (g32, g64):
            t["loss"] = t["loss"].reshape(())
        # A gradient that is zero in exact arithmetic (BERT's key bias: softmax ignores a shift of
        # every score of a row) is rounding noise in both; it is normalised by 1e-3 x the median
        # gradient scale of the model instead of its own max.
        floor = 1e-3 * float(np.median([np.abs(v).max() for k, v in g64.items() if k != "loss"]))
        torch_err = {k: errors(g32[k], g64[k], floor)[1] for k in g64}
        median = float(np.median([v for k, v in torch_err.items() if k != "loss"]))
        worst = None
        for k in sorted(g64, key=lambda k: (k != "loss", k)):
            if rlx[k].shape != g64[k].shape:
                print(f"| {name} | {k} | - | - | - | - | - | FAIL: shape {rlx[k].shape} != {g64[k].shape} |")
                ok = False
                continue
            e, n, r = errors(rlx[k], g64[k], floor)
            bar = a.factor * max(torch_err[k], median)
            passed = bool(np.isfinite(rlx[k]).all()) and n <= bar
            ok &= passed
            row = {"model": name, "tensor": k, "loss": a.loss, "max_abs": e, "max_rel": r,
                   "err_rlx": n, "err_torch32": torch_err[k], "bar": bar,
                   "result": "pass" if passed else "FAIL"}
            rows.append(row)
            if a.all or not passed or k == "loss":
                print(f"| {name} | {k} | {e:.2e} | {r:.1e} | {n:.1e} | {torch_err[k]:.1e} | {bar:.1e} "
                      f"| {row['result']} |")
            if k != "loss" and (worst is None or n / bar > worst["err_rlx"] / worst["bar"]):
                worst = row
        if worst and not a.all:
            w = worst
            print(f"| {name} | worst of {len(g64) - 1}: {w['tensor']} | {w['max_abs']:.2e} | {w['max_rel']:.1e} "
                  f"| {w['err_rlx']:.1e} | {w['err_torch32']:.1e} | {w['bar']:.1e} | {w['result']} |")
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["torch", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--models", default="bert_mini,llama,mlp")
    ap.add_argument("--loss", choices=["sum", "mse"], default="sum")
    ap.add_argument("--factor", type=float, default=8.0)
    ap.add_argument("--all", action="store_true", help="print every tensor, not only the worst")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch_grads(a) if a.what == "torch" else compare(a)


if __name__ == "__main__":
    main()
