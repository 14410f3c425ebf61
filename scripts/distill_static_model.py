#!/usr/bin/env python3
"""Distil a model2vec-style static embedding table from all-MiniLM-L6-v2.

Usage: distill_static_model.py SRC_DIR OUT_DIR [--dim 256]

SRC_DIR holds the sentence-transformers folder (model.safetensors, tokenizer.json,
LICENSE, NOTICE). Every vocabulary token t is run once through the transformer as the
sequence `[CLS] t [SEP]` and mean-pooled (exactly as sentence-transformers pools a
one-token sentence). The table is then centred, reduced with PCA to --dim dimensions
and weighted with SIF over a Zipf estimate of token frequency (token id as rank), the
recipe of model2vec's `distill`. OUT_DIR receives `model.safetensors` (tensor
`embeddings`, F32 [vocab, dim]), `tokenizer.json` (padding and truncation removed),
`config.json`, and the upstream LICENSE and NOTICE.

Only numpy is needed; the BERT forward pass is written out here. ~1 CPU-minute.
"""
import json
import math
import os
import shutil
import struct
import sys
import time

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[info["dtype"]]
        out[name] = np.frombuffer(data[a:b], dtype=dtype).reshape(info["shape"])
    return out


def save_safetensors(path, tensors):
    header, chunks, offset = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        raw = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((8 - len(blob) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for raw in chunks:
            f.write(raw)


def erf(x):
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7.
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def forward(W, ids, n_layers=6, heads=12):
    """ids: int array [B, L]; returns last hidden states [B, L, H]."""
    B, L = ids.shape
    h = W["embeddings.word_embeddings.weight"][ids]
    h = h + W["embeddings.position_embeddings.weight"][:L][None]
    h = h + W["embeddings.token_type_embeddings.weight"][0][None, None]
    h = layer_norm(h, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"])
    H = h.shape[-1]
    d = H // heads
    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        def lin(x, n, p=p):
            # 2-D matmul: a 3-D operand would make numpy loop over tiny per-sequence products.
            y = x.reshape(-1, x.shape[-1]) @ W[p + n + ".weight"].T + W[p + n + ".bias"]
            return y.reshape(x.shape[:-1] + (y.shape[-1],))

        q = lin(h, "attention.self.query").reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        k = lin(h, "attention.self.key").reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        v = lin(h, "attention.self.value").reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        h = layer_norm(lin(ctx, "attention.output.dense") + h, W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"])
        inter = gelu(lin(h, "intermediate.dense"))
        h = layer_norm(lin(inter, "output.dense") + h, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"])
    return h


def main():
    args = sys.argv[1:]
    dim = 256
    if "--dim" in args:
        i = args.index("--dim")
        dim = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    src, out = args
    t0 = time.time()
    W = {k: v.astype(np.float32) if v.dtype == np.float32 else v for k, v in load_safetensors(os.path.join(src, "model.safetensors")).items()}
    W = {k[5:] if k.startswith("bert.") else k: v for k, v in W.items()}
    tok = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    n = len(vocab)
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    table = np.zeros((n, W["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
    batch = 2048
    for start in range(0, n, batch):
        ids = np.arange(start, min(n, start + batch))
        seq = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        table[start : start + len(ids)] = forward(W, seq).mean(axis=1)
        print(f"\r  {min(n, start + batch)}/{n} tokens", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    t1 = time.time()
    # Centre, PCA, SIF/Zipf weighting (model2vec's post-processing).
    table = table - table.mean(axis=0, keepdims=True)
    if dim < table.shape[1]:
        _, _, vt = np.linalg.svd(table, full_matrices=False)
        table = table @ vt[:dim].T
    inv_rank = 1.0 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    sif = 1e-4
    table = table * (sif / (sif + proba))[:, None]
    os.makedirs(out, exist_ok=True)
    save_safetensors(os.path.join(out, "model.safetensors"), {"embeddings": table.astype(np.float32)})
    tok["padding"] = None
    tok["truncation"] = None
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "normalize": True,
        "hidden_dim": int(table.shape[1]),
        "base_model": "sentence-transformers/all-MiniLM-L6-v2",
        "distillation": "mean-pooled [CLS] t [SEP], centred, PCA, SIF 1e-4 over Zipf ranks",
    }
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    for name in ("LICENSE", "NOTICE"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
    print(f"distilled {n} tokens x {table.shape[1]} dims: forward {t1 - t0:.1f}s, total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
