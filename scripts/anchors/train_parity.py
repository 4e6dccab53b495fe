#!/usr/bin/python3
"""train_parity.py: `rlx train` against torch, SGD and AdamW: the MLP on the digits data, and
bert_mini (the anchors' 4 x 256 encoder, ../shared/anchors/make_models.py) with embeddings and a
sequence-classifier head on seeded token ids.

For each model and optimizer: torch builds the model with a fixed seed and writes its initial
weights to a safetensors file (rlx's HF names); torch then trains STEPS steps on the training data
in file order (mean cross-entropy) in float32 and, on the same weights, in float64 (the ground
truth); `rlx train --init ... --no-shuffle --eval-every 1 --json --save ...` does the same steps.
Compared: the per-step losses and the final weights (every parameter tensor).

bert_mini: word / position / token-type embeddings (vocab 1000, 512 positions, as rlx builds) +
LayerNorm, make_models.BertEncoder(4, 256, 4, 1024) (post-LN, erf GELU, no dropout), then the HF
BertForSequenceClassification head: tanh(pooler(first token)) -> classifier (2 classes). Batch 8,
seq 32 (--bert-batch / --bert-seq); ids uniform in [0, 1000), label = id[1] < 500.

Tolerance (why): float32 training differs from the float64 run by rounding that the steps carry
forward; torch's own float32 error e32 = max|torch32 - torch64| (per-step losses; final weights) is
measured in the same run. rlx passes when max|rlx - torch64| <= FACTOR * e32 + 1e-7 (FACTOR 8, as
for inference parity in compare.py; the small floor covers an e32 that happens to be ~0). A wrong
optimizer rule (a missing bias correction, coupled weight decay, momentum applied once too often)
moves the losses by 1e-3 or more within a few steps.

Usage: /usr/bin/python3 scripts/anchors/train_parity.py [--steps 20] [--batch 64] [--factor 8]
       [--models mlp,bert_mini] [--bert-batch 8] [--bert-seq 32]
       (RLX=path/to/rlx, default build/rlx-runtime/rlx; RLX_ANCHORS=../shared/anchors)
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
ANCHORS = os.environ.get("RLX_ANCHORS", os.path.join(ROOT, "..", "shared", "anchors"))


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


BERT_VOCAB, BERT_POSITIONS, BERT_CLASSES = 1000, 512, 2


def bert_mini_classifier():
    """The anchors' bert_mini encoder with HF-style embeddings and a sequence-classifier head, and
    the rlx name of each of its parameters."""
    sys.path.insert(0, ANCHORS)
    sys.path.insert(0, HERE)
    import make_models  # noqa: E402  (../shared/anchors)
    from export_weights import rlx_name  # noqa: E402

    class BertCls(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.word = torch.nn.Embedding(BERT_VOCAB, 256)
            self.pos = torch.nn.Embedding(BERT_POSITIONS, 256)
            self.types = torch.nn.Embedding(2, 256)
            self.ln = torch.nn.LayerNorm(256, eps=1e-12)
            self.enc = make_models.BertEncoder(4, 256, 4, 1024)
            self.pool = torch.nn.Linear(256, 256)
            self.cls = torch.nn.Linear(256, BERT_CLASSES)

        def forward(self, ids):
            s = ids.shape[1]
            pos = torch.arange(s).expand_as(ids)
            x = self.word(ids) + self.types(torch.zeros_like(ids)) + self.pos(pos)
            x = self.enc(self.ln(x))
            return self.cls(torch.tanh(self.pool(x[:, 0])))

    top = {"word": "embeddings.word_embeddings", "pos": "embeddings.position_embeddings",
           "types": "embeddings.token_type_embeddings", "ln": "embeddings.LayerNorm",
           "pool": "pooler.dense", "cls": "classifier"}
    torch.manual_seed(1234)
    m = BertCls()
    names = {}
    for n, p in m.named_parameters():
        head, rest = n.split(".", 1)
        names[n] = rlx_name("bert_mini", rest) if head == "enc" else top[head] + "." + rest
    return m, names


def torch_run_generic(model, names, init, batches, opt_name, lr, dtype):
    """Trains a copy of \p model from \p init (rlx names) on \p batches [(input, labels)]."""
    import copy
    m = copy.deepcopy(model)
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.copy_(torch.from_numpy(init[names[n]]))
    m = m.to(dtype)
    if opt_name == "sgd":
        opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    else:
        opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for xb, yb in batches:
        loss = torch.nn.functional.cross_entropy(m(torch.from_numpy(xb)), torch.from_numpy(yb))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = {names[n]: p.detach().to(torch.float64).numpy() for n, p in m.named_parameters()}
    return np.array(losses), final


def bert_parity(rlx, args, tmp):
    """bert_mini with a classifier head: rlx train vs torch float32 / float64. Returns ok."""
    model, names = bert_mini_classifier()
    init = {names[n]: p.detach().numpy().copy() for n, p in model.named_parameters()}
    rng = np.random.RandomState(7)
    b, s = args.bert_batch, args.bert_seq
    ids = rng.randint(0, BERT_VOCAB, size=(args.steps * b, s)).astype(np.int64)
    labels = (ids[:, 1] < BERT_VOCAB // 2).astype(np.int64)
    data = os.path.join(tmp, "bert_data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "train_ids.npy"), ids)
    np.save(os.path.join(data, "train_labels.npy"), labels)
    wpath = os.path.join(tmp, "bert_init.safetensors")
    write_safetensors(wpath, init)
    batches = [(ids[k * b:(k + 1) * b], labels[k * b:(k + 1) * b]) for k in range(args.steps)]
    ok_all = True
    for opt_name, lr in (("sgd", 0.01), ("adamw", 1e-4)):
        l32, w32 = torch_run_generic(model, names, init, batches, opt_name, lr, torch.float32)
        l64, w64 = torch_run_generic(model, names, init, batches, opt_name, lr, torch.float64)
        out = os.path.join(tmp, "bert_" + opt_name + ".safetensors")
        cmd = [rlx, "train", "--model", "bert", "--config", "mini", "--head", "cls", "--vocab",
               str(BERT_VOCAB), "--seq", str(s), "--batch", str(b), "--data", data, "--init",
               wpath, "--no-shuffle", "--steps", str(args.steps), "--optimizer", opt_name, "--lr",
               str(lr), "--eval-every", "1", "--json", "--save", out]
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
        worst = max(w64, key=lambda n: np.abs(wr[n].astype(np.float64) - w64[n]).max())
        ok = err_l <= args.factor * e32_l + 1e-7 and err_w <= args.factor * e32_w + 1e-7
        ok_all &= ok
        print(f"bert_mini b{b} s{s} {opt_name:6s} {args.steps} steps: losses max|rlx-torch64| "
              f"{err_l:.2e} (torch32 {e32_l:.2e}), final weights {err_w:.2e} (torch32 "
              f"{e32_w:.2e}; worst {worst}), loss {l64[0]:.4f} -> {l64[-1]:.4f}  "
              f"{'ok' if ok else 'FAIL'}")
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--factor", type=float, default=8.0)
    ap.add_argument("--models", default="mlp,bert_mini")
    ap.add_argument("--bert-batch", type=int, default=8)
    ap.add_argument("--bert-seq", type=int, default=32)
    args = ap.parse_args()
    models = args.models.split(",")
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
        for opt_name, lr in (("sgd", 0.1), ("adamw", 0.003)) if "mlp" in models else ():
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
        if "bert_mini" in models:
            failed |= not bert_parity(rlx, args, tmp)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
