#!/usr/bin/env python3
"""bench_generate_peer.py: the PyTorch peer for tools/bench-generate.

  make DIR --vocab V --embd C --layers L --heads H --ctx T [--seed S]
      writes DIR/model.safetensors and DIR/config.json: a GPT-2-shaped model with random weights
      (std 0.02, tied head, no head bias, exact GELU), which `ryzen-ckpt import` turns into a
      checkpoint, so both sides run the very same weights.
  run DIR --prompt-len P --new N [--rounds R]
      greedy decoding in float32 with a KV cache (the prompt in one pass, then a new token costs
      one row through each layer and attention over the cached keys and values), one thread;
      prints "new_tokens_per_s=X ms_per_token=Y prompt_tokens_per_s=Z cpu_ms_per_token=W"
      (medians over R rounds; the new tokens' time is counted as ryzen-generate --timing counts
      it: N drawn, N - 1 run).
  roof --bytes B [--rounds R]
      the memory roof of decoding: one thread sums a float32 buffer of B bytes (the weights'
      size, so that no cache holds it) R times; prints "read_gb_per_s=X" (the best round: what
      one core can stream from memory, which a token's pass over every weight cannot beat).

The safetensors file is read with struct + json + torch.frombuffer (no safetensors package in
Debian).  Fairness: tools/bench-generate runs it as run-torch-peer runs the training peer
(Debian's torch on OpenBLAS, OPENBLAS_CORETYPE unset, one thread, inference mode).
"""
import argparse
import json
import math
import statistics
import struct
import sys
import time

import torch
import torch.nn.functional as F


def write_model(d, a):
    g = torch.Generator().manual_seed(a.seed)
    C, V, T, L = a.embd, a.vocab, a.ctx, a.layers

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.02

    t = {"wte.weight": r(V, C), "wpe.weight": r(T, C),
         "ln_f.weight": torch.ones(C), "ln_f.bias": torch.zeros(C)}
    for i in range(L):
        p = f"h.{i}."
        t.update({p + "ln_1.weight": torch.ones(C), p + "ln_1.bias": torch.zeros(C),
                  p + "attn.c_attn.weight": r(C, 3 * C), p + "attn.c_attn.bias": torch.zeros(3 * C),
                  p + "attn.c_proj.weight": r(C, C), p + "attn.c_proj.bias": torch.zeros(C),
                  p + "ln_2.weight": torch.ones(C), p + "ln_2.bias": torch.zeros(C),
                  p + "mlp.c_fc.weight": r(C, 4 * C), p + "mlp.c_fc.bias": torch.zeros(4 * C),
                  p + "mlp.c_proj.weight": r(4 * C, C), p + "mlp.c_proj.bias": torch.zeros(C)})
    header, off, blobs = {}, 0, []
    for name, x in t.items():
        b = x.contiguous().float().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(f"{d}/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": V,
           "n_positions": T, "n_ctx": T, "n_embd": C, "n_layer": L, "n_head": a.heads,
           "n_inner": 4 * C, "activation_function": "gelu", "layer_norm_epsilon": 1e-5,
           "tie_word_embeddings": True}
    with open(f"{d}/config.json", "w") as f:
        json.dump(cfg, f)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(bytes(blob[8:8 + n]))
    header.pop("__metadata__", None)
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        x = torch.frombuffer(blob, dtype=torch.float32, count=(e - b) // 4, offset=8 + n + b)
        out[name] = x.reshape(h["shape"]).clone()
    return out


class Decoder:
    """GPT-2 greedy decoding with a KV cache, float32."""

    def __init__(self, d):
        with open(f"{d}/config.json") as f:
            c = json.load(f)
        self.w = read_safetensors(f"{d}/model.safetensors")
        self.L, self.H, self.eps = c["n_layer"], c["n_head"], c.get("layer_norm_epsilon", 1e-5)
        self.head = self.w["wte.weight"]

    def ln(self, x, p):
        return F.layer_norm(x, x.shape[-1:], self.w[p + ".weight"], self.w[p + ".bias"], self.eps)

    def lin(self, x, p):
        return torch.addmm(self.w[p + ".bias"], x, self.w[p + ".weight"])

    def step(self, ids, pos, cache):
        """Rows for ids at positions pos.. (a prefill when len(ids) > 1); the last row's logits."""
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][pos:pos + len(ids)]
        T, C = x.shape
        H, D = self.H, C // self.H
        for i in range(self.L):
            p = f"h.{i}."
            q, k, v = self.lin(self.ln(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=-1)
            q, k, v = (t.reshape(T, H, D).transpose(0, 1) for t in (q, k, v))
            if i in cache:
                k = torch.cat([cache[i][0], k], dim=1)
                v = torch.cat([cache[i][1], v], dim=1)
            cache[i] = (k, v)
            s = q @ k.transpose(1, 2) / math.sqrt(D)  # (H, T, T_cached)
            if T > 1:  # the prefill: causal within the prompt
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            y = torch.softmax(s, dim=-1) @ v
            x = x + self.lin(y.transpose(0, 1).reshape(T, C), p + "attn.c_proj")
            h = F.gelu(self.lin(self.ln(x, p + "ln_2"), p + "mlp.c_fc"))
            x = x + self.lin(h, p + "mlp.c_proj")
        return self.ln(x[-1:], "ln_f") @ self.head.T

    def generate(self, prompt, n):
        """n new tokens after the prompt; the seconds of the prompt's pass and of the new tokens
        (each drawn and, but the last, run: as ryzen-generate --timing counts them), and the
        new tokens' CPU seconds (the work, where the wall time also counts waiting for a CPU)."""
        cache = {}
        t0 = time.perf_counter()
        logits = self.step(torch.tensor(prompt), 0, cache)
        out, pos = [], len(prompt)
        t1, c1 = time.perf_counter(), time.process_time()
        for k in range(n):
            nxt = int(torch.argmax(logits[-1]))
            out.append(nxt)
            if k + 1 < n:
                logits = self.step(torch.tensor([nxt]), pos, cache)
                pos += 1
        return out, t1 - t0, time.perf_counter() - t1, time.process_time() - c1


def roof(nbytes, rounds):
    buf = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
    float(buf.sum())  # touched once: its pages are mapped
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        float(buf.sum())
        best = min(best, time.perf_counter() - t0)
    print(f"read_gb_per_s={buf.numel() * 4 / best / 1e9:.2f}")
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    for k, v in (("vocab", 4096), ("embd", 256), ("layers", 2), ("heads", 4), ("ctx", 128),
                 ("seed", 1)):
        m.add_argument("--" + k, type=int, default=v)
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--prompt-len", type=int, default=8)
    r.add_argument("--new", type=int, default=32)
    r.add_argument("--rounds", type=int, default=3)
    f = sub.add_parser("roof")
    f.add_argument("--bytes", type=int, required=True)
    f.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.cmd == "make":
        write_model(a.dir, a)
        return 0
    if a.cmd == "roof":
        return roof(a.bytes, a.rounds)
    dec = Decoder(a.dir)
    prompt = [(7 * i + 3) % dec.head.shape[0] for i in range(a.prompt_len)]
    ptimes, times, cpus = [], [], []
    with torch.inference_mode():
        for _ in range(a.rounds):
            _, p, s, c = dec.generate(prompt, a.new)
            ptimes.append(p)
            times.append(s)
            cpus.append(c)
    p, s, c = (statistics.median(v) for v in (ptimes, times, cpus))
    print(f"new_tokens_per_s={a.new / s:.2f} ms_per_token={1e3 * s / a.new:.3f} "
          f"prompt_tokens_per_s={a.prompt_len / p:.2f} cpu_ms_per_token={1e3 * c / a.new:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
