#!/usr/bin/python3
"""anchor_config.py: the anchor models as rlx sees them: `rlx` flags, benchmark cases, FLOP counts.

One table for parity.sh, bench.sh and bench.py. The flags mirror ../shared/anchors/make_models.py:
BERT is post-LN with erf GELU, LayerNorm eps 1e-12 and no mask; LLaMA is plain multi-head attention
(kv heads = heads), RMSNorm eps 1e-6, RoPE rotate-half with theta 10000, causal, SwiGLU, final
RMSNorm; MLP is 784-512-512-10 with ReLU. Those fixed choices are rlx's builder defaults.

Usage as a command: anchor_config.py NAME BATCH SEQ   prints the flags of `rlx run` / `rlx bench`.
"""
import sys

# model -> rlx flags without batch/seq.
RLX_FLAGS = {
    "bert_base": "--model bert --layers 12 --hidden 768 --heads 12 --kv-heads 12 --ffn 3072",
    "bert_mini": "--model bert --layers 4 --hidden 256 --heads 4 --kv-heads 4 --ffn 1024",
    "llama": "--model llama --layers 4 --hidden 512 --heads 8 --kv-heads 8 --ffn 1376",
    "mlp": "--model mlp --dims 784,512,512,10",
}

# (model, batch, seq) rows of the performance table, as bench_ort.js's CASES.
CASES = [("bert_base", 1, 128), ("bert_base", 8, 128), ("bert_mini", 1, 128), ("bert_mini", 8, 128),
         ("llama", 1, 128), ("mlp", 64, 0)]


def rlx_flags(name, batch, seq):
    """The `rlx run` / `rlx bench` flags that build anchor `name` for a batch and sequence length."""
    if name not in RLX_FLAGS:
        raise ValueError(f"unknown anchor model '{name}' (known: {', '.join(RLX_FLAGS)})")
    flags = RLX_FLAGS[name] + f" --batch {batch}"
    return flags if name == "mlp" else flags + f" --seq {seq}"


def gflop(model, b, s):
    """GFLOP of one forward pass: matmul FLOPs only (2*M*N*K), attention dense; as bench_ort.js."""
    tok = b * s
    if model in ("bert_base", "bert_mini"):
        L, H, F = (12, 768, 3072) if model == "bert_base" else (4, 256, 1024)
        return L * (tok * 2 * (4 * H * H + 2 * H * F) + b * 4 * s * s * H) / 1e9
    if model == "llama":
        L, H, F = 4, 512, 1376
        return L * (tok * 2 * (4 * H * H + 3 * H * F) + b * 4 * s * s * H) / 1e9
    if model == "mlp":
        return b * 2 * (784 * 512 + 512 * 512 + 512 * 10) / 1e9
    raise ValueError(f"unknown anchor model {model!r}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit("usage: anchor_config.py NAME BATCH SEQ")
    try:
        print(rlx_flags(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    except (KeyError, ValueError) as e:
        raise SystemExit(f"anchor_config.py: {e}")
