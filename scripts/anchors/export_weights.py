#!/usr/bin/python3
"""export_weights.py: the anchor models' weights as safetensors with rlx's names, plus inputs/outputs.

Builds each anchor model of ../shared/anchors/make_models.py with its fixed seed (make_models.build,
imported, not copied) and writes, per model, into OUTDIR:

  <name>.safetensors   the weights, renamed to the names rlx's model builders load (HuggingFace-style,
                       [out, in] weight layout as in torch), float32
  <name>.x.npy         the reference input (make_models.example_input, float32)
  <name>.y.npy         torch's output for it, computed in float32
  <name>.y64.npy       the same model evaluated in float64: the ground truth that parity.sh measures
                       both torch's and rlx's float32 rounding error against
  <name>.meta.json     config, shapes, seed and the name map (torch name -> rlx name)

After writing, every file is read back (safetensors parsed by hand, .npy by numpy) and compared with
torch's state_dict bit for bit; a mismatch is a non-zero exit.

--perturb-norms replaces the LayerNorm / RMSNorm parameters (ones and zeros at initialisation, so a
swapped or ignored norm parameter would go unnoticed) by seeded random values near their defaults;
the files then describe a different model than the ONNX anchors, which is the point: parity.sh runs
both variants.

Usage: /usr/bin/python3 export_weights.py OUTDIR [--models bert_base,bert_mini,llama,mlp]
           [--batch B] [--seq S] [--mlp-batch B] [--perturb-norms] [--anchors DIR]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

DEFAULT_ANCHORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                               "shared", "anchors")
MODELS = ["bert_base", "bert_mini", "llama", "mlp"]

# Per-layer renames. Keys are the torch module names inside layer i of make_models.py, values the
# names rlx's builders use (rlx-runtime/src/models/{bert,llama,mlp}.cpp): HuggingFace BertModel /
# LlamaModel parameter names without a model-level prefix ("bert." / "model."; the builders' default).
BERT_LAYER = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "o": "attention.output.dense",
    "ln1": "attention.output.LayerNorm",
    "fc1": "intermediate.dense",
    "fc2": "output.dense",
    "ln2": "output.LayerNorm",
}
LLAMA_LAYER = {
    "attn_norm": "input_layernorm",
    "wq": "self_attn.q_proj",
    "wk": "self_attn.k_proj",
    "wv": "self_attn.v_proj",
    "wo": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "w1": "mlp.gate_proj",
    "w3": "mlp.up_proj",
    "w2": "mlp.down_proj",
}
BERT_LAYER_PREFIX = "encoder.layer.{i}."
LLAMA_LAYER_PREFIX = "layers.{i}."
LLAMA_TOP = {"norm": "norm"}
# MLP: the builder names its Linear layers fc1, fc2, ... as torch does.
MLP_TOP = {"fc1": "fc1", "fc2": "fc2", "fc3": "fc3"}


def rlx_name(model, torch_name):
    """The rlx parameter name for a torch state_dict key of the anchor model `model`."""
    parts = torch_name.split(".")
    if model in ("bert_base", "bert_mini"):
        if parts[0] == "layers" and len(parts) == 4 and parts[2] in BERT_LAYER:
            return BERT_LAYER_PREFIX.format(i=parts[1]) + BERT_LAYER[parts[2]] + "." + parts[3]
    elif model == "llama":
        if parts[0] == "layers" and len(parts) == 4 and parts[2] in LLAMA_LAYER:
            return LLAMA_LAYER_PREFIX.format(i=parts[1]) + LLAMA_LAYER[parts[2]] + "." + parts[3]
        if len(parts) == 2 and parts[0] in LLAMA_TOP:
            return LLAMA_TOP[parts[0]] + "." + parts[1]
    elif model == "mlp":
        if len(parts) == 2 and parts[0] in MLP_TOP:
            return MLP_TOP[parts[0]] + "." + parts[1]
    raise KeyError(f"export_weights: no rlx name for {model} parameter '{torch_name}'")


# ----------------------------------------------------------------------------- safetensors
_DTYPES = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64", np.dtype("<f2"): "F16",
           np.dtype("<i8"): "I64", np.dtype("<i4"): "I32"}
_NP_OF = {v: k for k, v in _DTYPES.items()}


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: ndarray} as safetensors: u64 LE header size, JSON header, raw LE data.

    Tensors are laid out in name order; the header is padded with spaces to a multiple of 8 bytes so
    that every tensor starts 8-byte aligned (as the reference writer does)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        if a.dtype not in _DTYPES:
            raise TypeError(f"write_safetensors: '{name}' has unsupported dtype {a.dtype}")
        raw = a.tobytes()
        header[name] = {"dtype": _DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Reads a safetensors file into ({name: ndarray}, metadata), checking offsets and sizes."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: truncated (no header length)")
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise ValueError(f"{path}: header length {hlen} exceeds file size {len(data)}")
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    body = memoryview(data)[8 + hlen:]
    meta = header.pop("__metadata__", {})
    out, end_max = {}, 0
    for name, h in header.items():
        dt = _NP_OF[h["dtype"]]
        b, e = h["data_offsets"]
        n = int(np.prod(h["shape"], dtype=np.int64))
        if e - b != n * dt.itemsize or e > len(body):
            raise ValueError(f"{path}: tensor '{name}' offsets {b}..{e} do not fit its shape/file")
        out[name] = np.frombuffer(body[b:e], dtype=dt).reshape(h["shape"])
        end_max = max(end_max, e)
    if end_max != len(body):
        raise ValueError(f"{path}: {len(body) - end_max} trailing bytes after the last tensor")
    return out, meta


# ----------------------------------------------------------------------------- export
def perturb_norms(model, torch):
    """Replaces every norm parameter with seeded values near its default (1 for weights, 0 bias)."""
    g = torch.Generator().manual_seed(4321)
    with torch.no_grad():
        for name, p in model.named_parameters():
            is_norm = any(t in name for t in ("ln1", "ln2", "attn_norm", "ffn_norm")) or \
                name == "norm.weight"
            if not is_norm:
                continue
            noise = 0.2 * torch.randn(p.shape, generator=g)
            p.copy_(noise if name.endswith(".bias") else 1.0 + noise)


def config_of(name, model, batch, seq):
    """The rlx model kind and config flags (as parity.sh/bench.sh pass them) of an anchor model."""
    if name in ("bert_base", "bert_mini"):
        c = model.cfg
        return {"model": "bert", "layers": c["layers"], "hidden": c["hidden"], "heads": c["heads"],
                "kv_heads": c["heads"], "ffn": c["ffn"], "batch": batch, "seq": seq}
    if name == "llama":
        c = model.cfg
        return {"model": "llama", "layers": c["layers"], "hidden": c["hidden"], "heads": c["heads"],
                "kv_heads": c["heads"], "ffn": c["ffn"], "batch": batch, "seq": seq}
    dims = model.cfg["dims"]
    return {"model": "mlp", "dims": dims, "batch": batch}


def export_one(mm, torch, name, outdir, batch, seq, perturb):
    model = mm.build(name)
    if perturb:
        perturb_norms(model, torch)
    sd = {k: v.detach().cpu().numpy().astype("<f4") for k, v in model.state_dict().items()}
    renamed = {}
    for k, v in sd.items():
        rn = rlx_name(name, k)
        if rn in renamed:
            raise KeyError(f"export_weights: two parameters map to '{rn}'")
        renamed[rn] = v
    x = mm.example_input(name, batch, seq)
    with torch.no_grad():
        y = model(x)
        y64 = model.double()(x.double())
    cfg = config_of(name, model, batch, seq)
    meta = {"name": name, "seed": mm.SEED, "perturbed_norms": bool(perturb), "torch": torch.__version__,
            "config": cfg, "x_shape": list(x.shape), "y_shape": list(y.shape),
            "params": int(sum(v.size for v in sd.values())),
            "names": {k: rlx_name(name, k) for k in sd}}

    st_path = os.path.join(outdir, f"{name}.safetensors")
    write_safetensors(st_path, renamed, {"format": "pt", "source": "rlx scripts/anchors/export_weights.py",
                                         "anchor": name})
    np.save(os.path.join(outdir, f"{name}.x.npy"), x.numpy().astype("<f4"))
    np.save(os.path.join(outdir, f"{name}.y.npy"), y.numpy().astype("<f4"))
    np.save(os.path.join(outdir, f"{name}.y64.npy"), y64.numpy().astype("<f8"))
    with open(os.path.join(outdir, f"{name}.meta.json"), "w") as f:
        json.dump(meta, f, indent=1)

    # Round trip: the file must hold exactly the state_dict under the new names, bit for bit.
    back, _ = read_safetensors(st_path)
    if set(back) != set(renamed):
        raise SystemExit(f"{name}: safetensors names differ from the export: "
                         f"{sorted(set(back) ^ set(renamed))[:5]}")
    for k, v in sd.items():
        b = back[rlx_name(name, k)]
        if b.shape != v.shape or b.dtype != np.dtype("<f4") or not np.array_equal(b, v):
            raise SystemExit(f"{name}: '{k}' did not round-trip through {st_path}")
    for suffix, ref in (("x", x.numpy()), ("y", y.numpy())):
        if not np.array_equal(np.load(os.path.join(outdir, f"{name}.{suffix}.npy")), ref):
            raise SystemExit(f"{name}: {suffix}.npy did not round-trip")
    err32 = float(np.max(np.abs(y.numpy().astype(np.float64) - y64.numpy())))
    print(f"{name:10s} {len(renamed):4d} tensors {meta['params']:>11,d} params  x{list(x.shape)} "
          f"y{list(y.shape)}  torch f32 vs f64 max|d|={err32:.2e} max|y|={float(np.abs(y64.numpy()).max()):.2f}"
          f"  round trip ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--mlp-batch", type=int, default=64)
    ap.add_argument("--perturb-norms", action="store_true")
    ap.add_argument("--anchors", default=os.environ.get("RLX_ANCHORS", DEFAULT_ANCHORS))
    a = ap.parse_args()
    anchors = os.path.abspath(a.anchors)
    if not os.path.isfile(os.path.join(anchors, "make_models.py")):
        raise SystemExit(f"export_weights: no make_models.py in {anchors} (set --anchors or RLX_ANCHORS)")
    sys.path.insert(0, anchors)
    import make_models as mm  # noqa: E402  (the peer workloads, not copied)
    import torch  # noqa: E402

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    names = a.models.split(",")
    for name in names:
        if name not in MODELS:
            raise SystemExit(f"export_weights: unknown model '{name}' (known: {', '.join(MODELS)})")
    os.makedirs(a.outdir, exist_ok=True)
    for name in names:
        b = a.mlp_batch if name == "mlp" else a.batch
        export_one(mm, torch, name, a.outdir, b, a.seq, a.perturb_norms)


if __name__ == "__main__":
    main()
