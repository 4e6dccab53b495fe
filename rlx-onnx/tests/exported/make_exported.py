#!/usr/bin/env python3
"""Exports the tiny PyTorch models of exported_fusion_test (run from this folder; torch 1.13).

bert_layer.onnx : one post-LN BERT encoder layer (hidden 32, 2 heads, FFN 64, erf GELU), opset 14,
                  so LayerNorm arrives spelled in primitives (ReduceMean / Sub / Pow / Sqrt / Div).
llama_block.onnx: one LLaMA decoder block (RMSNorm, RoPE, causal attention, SwiGLU), hidden 32,
                  2 heads, FFN 48, opset 17.
Both take x [batch, seq, 32] with dynamic batch and seq, written the way the anchors'
make_models.py writes its models (nn.Linear weights, so ONNX MatMuls read [K, N] initializers).
Next to each model: <name>.x.npy (x, [2, 8, 32]) and <name>.y.npy (torch's output for it).
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

H, NH, SEQ = 32, 2, 8


class BertLayer(nn.Module):
    def __init__(self, hidden=H, heads=NH, ffn=64, eps=1e-12):
        super().__init__()
        self.nh, self.hd = heads, hidden // heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
        self.ln1 = nn.LayerNorm(hidden, eps=eps)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        B, S, E = x.shape
        q = self.q(x).view(B, S, self.nh, self.hd).transpose(1, 2)
        k = self.k(x).view(B, S, self.nh, self.hd).transpose(1, 2)
        v = self.v(x).view(B, S, self.nh, self.hd).transpose(1, 2)
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)), -1)
        ctx = torch.matmul(att, v).transpose(1, 2).reshape(B, S, E)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, hidden=H, heads=NH, ffn=48, max_seq=64, theta=10000.0):
        super().__init__()
        self.nh, self.hd = heads, hidden // heads
        inv = 1.0 / (theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        emb = torch.cat([torch.outer(torch.arange(max_seq, dtype=torch.float32), inv)] * 2, -1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("causal", torch.triu(torch.full((max_seq, max_seq), float("-inf")), 1),
                             persistent=False)
        self.attn_norm, self.ffn_norm = RMSNorm(hidden), RMSNorm(hidden)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        B, S, E = x.shape
        cos, sin, mask = self.cos[:S], self.sin[:S], self.causal[:S, :S]
        h = self.attn_norm(x)
        q = self.wq(h).view(B, S, self.nh, self.hd).transpose(1, 2)
        k = self.wk(h).view(B, S, self.nh, self.hd).transpose(1, 2)
        v = self.wv(h).view(B, S, self.nh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)) + mask
        ctx = torch.matmul(torch.softmax(att, -1), v).transpose(1, 2).reshape(B, S, E)
        x = x + self.wo(ctx)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def export(name, model, opset):
    torch.manual_seed(7)
    for p in model.parameters():  # norm scales and biases too, so none is the identity
        nn.init.uniform_(p, -0.5, 0.5) if p.dim() > 1 else nn.init.uniform_(p, 0.5, 1.5)
    model.eval()
    x = torch.randn(2, SEQ, H, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        torch.onnx.export(model, (x,), f"{name}.onnx", input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
                          opset_version=opset, do_constant_folding=True)
        y = model(x)
    np.save(f"{name}.x.npy", x.numpy().astype("<f4"))
    np.save(f"{name}.y.npy", y.numpy().astype("<f4"))


if __name__ == "__main__":
    torch.manual_seed(7)
    export("bert_layer", BertLayer(), 14)
    export("llama_block", LlamaBlock(), 17)
