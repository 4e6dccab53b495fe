#!/usr/bin/python3
"""bench.py: rlx against ONNX Runtime on the anchor workloads; medians of interleaved rounds, a table.

Run through bench.sh, which installs onnxruntime-node and exports the ONNX models first.

Each round times every selected case once with ONNX Runtime (../shared/anchors/bench_ort.js, CPU EP,
2 intra-op threads) and once with `rlx bench ... --threads 2 --json` (unless --rlx-extra sets
--threads); the order of the two alternates from round to round so that drift of a shared machine
hits both alike. The table gives, per case, the median over rounds of each runtime's per-round
median latency, the ratio rlx/ORT and GFLOP/s (matmul FLOPs only, the count bench_ort.js uses, for
both columns), and both GFLOP/s as a share of the machine's f32 FMA peak, measured once per round
by scripts/anchors/fma_peak.cpp (register-only FMA chains on 2 threads, the widest ISA): what no
GEMM can pass, so a row near it has nothing left to gain. Figures taken while other work runs are
labelled NOISY: other processes' CPU time during the job (/proc/stat's busy time less the bench's
own processes') over a quarter of a core on average (the load average would count the bench's own
threads).

With --rlx-onnx, rlx benchmarks the very .onnx file ONNX Runtime runs (`rlx bench --onnx`, imported by
rlx-onnx) instead of building the model with its own builder; the ratio then shows what the import
path costs next to the builder path.

Usage: bench.py --models-dir DIR --bench-ort FILE [--rlx PATH | --no-rlx] [--rlx-onnx] [--rounds 3]
                [--cases bert_base:1,bert_mini:8,llama,mlp] [--target-s 3] [--json FILE]
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anchor_config import CASES, gflop, rlx_flags  # noqa: E402


def parse_cases(spec):
    """'bert_base:1,llama,mlp:64' -> the matching (model, batch, seq) cases, in table order."""
    if not spec:
        return list(CASES)
    want = []
    for item in spec.split(","):
        model, _, b = item.strip().partition(":")
        match = [c for c in CASES if c[0] == model and (not b or c[1] == int(b))]
        if not match:
            raise SystemExit(f"bench: no case '{item}' (cases: "
                             + ", ".join(f"{m}:{b}" for m, b, _ in CASES) + ")")
        want += [c for c in match if c not in want]
    return [c for c in CASES if c in want]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_ort(args, model, tag):
    """Times every bench_ort.js case of `model` once; returns {(b, s): record} and the load record."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        out = f.name
    try:
        cmd = ["node", args.bench_ort, "--models", args.models_dir, "--only", model, "--target-s",
               str(args.target_s), "--min-reps", str(args.min_reps), "--tag", tag, "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"bench: bench_ort.js failed for {model}:\n{p.stderr.strip()[-2000:]}")
        for line in p.stdout.splitlines():
            log(f"  ort  | {line}")
        recs = [json.loads(l) for l in open(out) if l.strip()]
    finally:
        os.unlink(out)
    times = {(r["batch"], r["seq"]): r for r in recs if "median_ms" in r}
    load = next((r for r in recs if r.get("kind") == "load"), None)
    return times, load


def pick(d, *keys):
    """The first of `keys` present in dict `d` (rlx bench's JSON field names), or None."""
    for k in keys:
        if k in d:
            return d[k]
    return None


def run_rlx(args, model, b, s, runs, warmup):
    """One `rlx bench` of a case; returns its parsed JSON record (median_ms etc.)."""
    if args.rlx_onnx:  # the very .onnx file ONNX Runtime runs, imported by rlx-onnx
        flags = f"--onnx {shlex.quote(os.path.join(args.models_dir, model + '.onnx'))} --batch {b}"
        flags += "" if model == "mlp" else f" --seq {s}"
    else:
        flags = rlx_flags(model, b, s)
    cmd = [args.rlx, "bench"] + shlex.split(flags) + shlex.split(args.rlx_extra)
    if "--threads" not in args.rlx_extra:
        cmd += ["--threads", "2"]  # as bench_ort.js's intraOpNumThreads
    cmd += ["--runs", str(runs), "--warmup", str(warmup), "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"bench: `{' '.join(cmd)}` failed ({p.returncode}):\n{p.stderr.strip()[-2000:]}")
    text = p.stdout.strip()
    try:
        rec = json.loads(text[text.index("{"):text.rindex("}") + 1])
    except ValueError:
        raise SystemExit(f"bench: `{' '.join(cmd)}` printed no JSON object:\n{text[-2000:]}")
    med = pick(rec, "median_ms", "latency_median_ms")
    if med is None and isinstance(rec.get("latency_ms"), dict):
        med = pick(rec["latency_ms"], "median", "median_ms")
    if med is None:
        raise SystemExit(f"bench: rlx bench JSON has no median latency: {text[-1000:]}")
    rec["_median_ms"] = float(med)
    rec["_wall_s"] = wall
    rec["_cmd"] = " ".join(cmd)
    return rec


def busy_seconds():
    """CPU seconds every process of the machine has spent busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
        return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def children_seconds():
    """CPU seconds this script's finished children (ORT, rlx, fma_peak) have used."""
    t = os.times()
    return t.children_user + t.children_system


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def build_fma_peak(work):
    """Builds scripts/anchors/fma_peak.cpp into WORK once; returns its path (None when g++ fails)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fma_peak.cpp")
    exe = os.path.join(work, "fma_peak")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        p = subprocess.run(["g++", "-O2", "-pthread", src, "-o", exe], capture_output=True, text=True)
        if p.returncode != 0:
            log(f"# fma_peak did not build, no peak column: {p.stderr.strip()[-300:]}")
            return None
    return exe


def fma_peak(exe, threads):
    """The machine's f32 FMA peak on `threads` threads (GFLOP/s) and its ISA, measured now."""
    p = subprocess.run([exe, str(threads), "0.2"], capture_output=True, text=True)
    m = re.search(r"isa=(\S+) gflops=([\d.]+)", p.stdout)
    return (float(m.group(2)), m.group(1)) if m else (None, None)


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--bench-ort", required=True)
    ap.add_argument("--rlx", default=None)
    ap.add_argument("--no-rlx", action="store_true", help="time ONNX Runtime only")
    ap.add_argument("--rlx-extra", default="", help="extra flags for every `rlx bench`")
    ap.add_argument("--rlx-onnx", action="store_true",
                    help="rlx runs the same .onnx files as ORT (rlx bench --onnx) instead of its builder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="")
    ap.add_argument("--target-s", type=float, default=3.0, help="timed seconds per case per round")
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.rounds < 1:
        raise SystemExit("bench: --rounds must be >= 1")
    if not a.no_rlx and not a.rlx:
        raise SystemExit("bench: give --rlx PATH or --no-rlx")
    cases = parse_cases(a.cases)
    models = list(dict.fromkeys(m for m, _, _ in cases))

    peak_exe = build_fma_peak(os.path.dirname(os.path.abspath(a.json)) if a.json else "/tmp")
    peaks, peak_isa = [], None
    load0, t_start = loadavg(), time.monotonic()
    busy0, own0 = busy_seconds(), children_seconds()
    ort_t = {c: [] for c in cases}
    rlx_t = {c: [] for c in cases}
    raw, ort_check = [], {}
    for r in range(a.rounds):
        for model in models:
            mine = [c for c in cases if c[0] == model]
            rlx_first = r % 2 == 1

            def do_rlx():
                if a.no_rlx:
                    return
                for c in mine:
                    prev = ort_t[c][-1] if ort_t[c] else None
                    # As bench_ort.js: warm up for >= 3 runs and >= 1 s, then ~target_s of runs.
                    runs = 10 if prev is None else int(max(a.min_reps, min(300, a.target_s * 1e3 / prev)))
                    warmup = 3 if prev is None else int(max(3, min(5000, 1e3 / prev)))
                    rec = run_rlx(a, *c, runs, warmup)
                    rlx_t[c].append(rec["_median_ms"])
                    raw.append({"runtime": "rlx", "round": r, "model": c[0], "batch": c[1], "seq": c[2],
                                "median_ms": rec["_median_ms"], "wall_s": round(rec["_wall_s"], 2),
                                "loadavg": loadavg(), "cmd": rec["_cmd"],
                                "rlx_bench": {k: v for k, v in rec.items() if not k.startswith("_")}})
                    log(f"  rlx  | {c[0]:10s} b={c[1]:2d} s={c[2]:3d}  median {rec['_median_ms']:9.3f} ms"
                        f"  (runs {runs}, wall {rec['_wall_s']:.1f} s)")

            if rlx_first:
                do_rlx()
            times, load = run_ort(a, model, f"round{r}")
            if load:
                ort_check[model] = load.get("max_abs_diff_vs_torch")
            for c in mine:
                if (c[1], c[2]) not in times:
                    raise SystemExit(f"bench: bench_ort.js gave no timing for {c}")
                ort_t[c].append(times[(c[1], c[2])]["median_ms"])
                raw.append({"round": r, **times[(c[1], c[2])], "loadavg": loadavg()})
            if not rlx_first:
                do_rlx()
        if peak_exe:  # the FMA peak once per round, so a slow spell of the host shows in it too
            g, peak_isa = fma_peak(peak_exe, 2)
            if g:
                peaks.append(g)
        log(f"# round {r + 1}/{a.rounds} done, {time.monotonic() - t_start:.0f} s, load {loadavg():.2f}")
    load1 = loadavg()
    # Other work's share of the machine during the job, in cores: the machine's busy CPU time less
    # what the bench's own processes used (the load average counts the bench's threads too).
    busy1 = busy_seconds()
    others = None if busy0 is None or busy1 is None else max(
        0.0, (busy1 - busy0) - (children_seconds() - own0)) / (time.monotonic() - t_start)

    rows = []
    for c in cases:
        m, b, s = c
        om = statistics.median(ort_t[c])
        rm = statistics.median(rlx_t[c]) if rlx_t[c] else None
        g = gflop(m, b, s)
        rows.append({"case": f"{m} b{b}" + (f" s{s}" if s else ""), "model": m, "batch": b, "seq": s,
                     "gflop": round(g, 4), "ort_median_ms": om, "ort_rounds_ms": ort_t[c],
                     "rlx_median_ms": rm, "rlx_rounds_ms": rlx_t[c],
                     "ratio_rlx_over_ort": (rm / om) if rm else None,
                     "ort_gflops": g / (om / 1e3), "rlx_gflops": (g / (rm / 1e3)) if rm else None})

    peak = statistics.median(peaks) if peaks else None
    noisy = others > 0.25 if others is not None else max(load0, load1) > 0.5 * (os.cpu_count() or 1)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(f"\n### rlx vs ONNX Runtime ({when}; {cpu_model()} x{os.cpu_count()}; "
          f"{a.rounds} interleaved rounds, median of per-round medians; rlx runs "
          f"{'the same .onnx files (rlx-onnx import)' if a.rlx_onnx else 'its builder-made graphs'})\n")
    other = "" if others is None else f"; other processes used {others:.2f} cores on average"
    if noisy:
        print(f"NOISY: load average {load0:.1f} at start, {load1:.1f} at end on {os.cpu_count()} cores"
              f"{other} (other work was running); rerun on a quiet machine for figures to quote.\n")
    elif others is not None:
        print(f"Quiet: other processes used {others:.2f} cores on average during the job.\n")
    if peak:
        print(f"f32 FMA peak (scripts/anchors/fma_peak.cpp, 2 threads, {peak_isa}, median of the rounds): "
              f"{peak:.1f} GFLOP/s; the % columns are each runtime's GFLOP/s as a share of it.\n")

    def pct(g):
        return "-" if not (g and peak) else f"{100 * g / peak:.0f}%"
    print("| case | ORT median ms | rlx median ms | rlx / ORT | ORT GFLOP/s | rlx GFLOP/s | ORT % peak | rlx % peak |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['case']} | {row['ort_median_ms']:.3f} | {fmt(row['rlx_median_ms'], '.3f')} | "
              f"{fmt(row['ratio_rlx_over_ort'], '.2f')} | {row['ort_gflops']:.1f} | "
              f"{fmt(row['rlx_gflops'], '.1f')} | {pct(row['ort_gflops'])} | {pct(row['rlx_gflops'])} |")
    print("\nper-round medians (ms): " + "; ".join(
        f"{row['case']}: ORT " + "/".join(f"{t:.2f}" for t in row["ort_rounds_ms"])
        + ("" if not row["rlx_rounds_ms"] else " rlx " + "/".join(f"{t:.2f}" for t in row["rlx_rounds_ms"]))
        for row in rows))
    if ort_check:
        print("ORT vs torch max|diff| (bench_ort.js check): "
              + ", ".join(f"{k} {v:.1e}" for k, v in ort_check.items() if v is not None))
    print(f"total {time.monotonic() - t_start:.0f} s")

    if a.json:
        doc = {"when": when, "cpu": cpu_model(), "cores": os.cpu_count(), "rounds": a.rounds,
               "target_s": a.target_s, "loadavg_start": load0, "loadavg_end": load1, "other_cores": others, "noisy": noisy,
               "fma_peak_gflops": peak, "fma_peak_rounds": peaks, "fma_peak_isa": peak_isa,
               "rlx": a.rlx, "rows": rows, "raw": raw}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"results: {a.json}")


if __name__ == "__main__":
    main()
