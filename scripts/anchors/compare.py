#!/usr/bin/python3
"""compare.py: rlx's outputs against torch's for the anchor models; non-zero exit past tolerance.

For each model NAME in DIR it reads NAME.y.npy (torch, float32), NAME.y64.npy (the same model in
float64, the ground truth), NAME.rlx.npy (rlx) and, when present, NAME.ort.npy (ONNX Runtime), and
prints max abs error and max relative error of each float32 implementation.

Tolerance (why): two correct float32 implementations differ from the float64 result only by
rounding, and by a similar amount: torch's own float32 error e32 = max|torch32 - torch64| is measured
in the same run, and ONNX Runtime lands at 0.7-1.3 x e32 on these models. rlx passes when
max|rlx - torch64| <= FACTOR * e32 (FACTOR 8 by default) and the shapes match. Semantic mistakes are
far larger: tanh-GELU instead of erf gives 4e-4 (bert_mini) / 8e-4 (bert_base), a LayerNorm eps of
1e-5 instead of 1e-12 gives 2.1e-5 / 2.4e-5, i.e. 18 x / 12 x e32, while e32 is 1-2e-6. A fixed
absolute floor would either hide such mistakes on large outputs or fail honest kernels on small ones.

Usage: /usr/bin/python3 compare.py DIR [--models a,b] [--factor 8] [--label text] [--json FILE]
"""
import argparse
import json
import os
import sys

import numpy as np


def errors(got, ref):
    """(max abs error, max relative error) of got against ref.

    The relative error is taken over elements with |ref| >= 1e-2 * max|ref| so that values that are
    zero up to rounding do not dominate it."""
    d = np.abs(got.astype(np.float64) - ref)
    big = np.abs(ref) >= 1e-2 * np.abs(ref).max()
    rel = float((d[big] / np.abs(ref[big])).max()) if big.any() else 0.0
    return float(d.max()), rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--models", default="bert_base,bert_mini,llama,mlp")
    ap.add_argument("--factor", type=float, default=8.0)
    ap.add_argument("--label", default="")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    rows, ok = [], True
    print(f"\n### parity {a.label}: max abs error (max rel error) against torch float64; "
          f"tolerance {a.factor:g} x torch's float32 error\n")
    print("| model | max abs rlx-torch32 | rlx vs f64 | torch32 vs f64 | ORT vs f64 | rlx / torch err"
          " | tolerance | result |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in a.models.split(","):
        p = lambda s: os.path.join(a.dir, f"{name}.{s}.npy")  # noqa: E731
        y32, y64 = np.load(p("y")), np.load(p("y64"))
        e32, r32 = errors(y32, y64)
        tol = a.factor * e32
        row = {"model": name, "label": a.label, "torch32_vs_f64": e32, "torch32_vs_f64_rel": r32,
               "tolerance": tol}
        ort = "-"
        if os.path.exists(p("ort")):
            eo, ro = errors(np.load(p("ort")), y64)
            row.update(ort_vs_f64=eo, ort_vs_f64_rel=ro)
            ort = f"{eo:.2e} ({ro:.1e})"
        if not os.path.exists(p("rlx")):
            row["result"] = "missing"
            print(f"| {name} | - | - | {e32:.2e} ({r32:.1e}) | {ort} | - | {tol:.1e} | FAIL: no rlx output |")
            ok = False
        else:
            y = np.load(p("rlx"))
            if y.shape != y64.shape:
                row["result"] = f"shape {list(y.shape)} != {list(y64.shape)}"
                print(f"| {name} | - | - | {e32:.2e} | {ort} | - | {tol:.1e} | FAIL: {row['result']} |")
                ok = False
            else:
                et, rt = errors(y, y32.astype(np.float64))
                e, r = errors(y, y64)
                passed = bool(np.isfinite(y).all()) and e <= tol
                ok &= passed
                row.update(rlx_vs_torch32=et, rlx_vs_torch32_rel=rt, rlx_vs_f64=e, rlx_vs_f64_rel=r,
                           result="pass" if passed else "FAIL")
                print(f"| {name} | {et:.2e} ({rt:.1e}) | {e:.2e} ({r:.1e}) | {e32:.2e} ({r32:.1e}) | {ort} "
                      f"| {e / max(e32, 1e-30):.2f} | {tol:.1e} | {'pass' if passed else 'FAIL'} |")
        rows.append(row)
    if a.json:
        with open(a.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
