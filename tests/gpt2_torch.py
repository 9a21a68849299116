#!/usr/bin/env python3
"""gpt2_torch.py: an independent reader and GPT-2 forward pass for `ryzen-ckpt export`'s files,
in PyTorch, for tests/export.sh.

It reads DIR/model.safetensors with struct + json + torch.frombuffer (the format is an 8-byte
little-endian header length, a JSON header, then raw tensors) and DIR/config.json (GPT2Config's
keys), runs GPT-2's forward pass written here from the architecture (pre-LayerNorm blocks,
Conv1D weights stored (in, out), causal attention scaled by 1/sqrt(head size), GELU as
config.json's activation_function says, the head tied to wte unless tie_word_embeddings is
false, plus lm_head.bias when "ryzen_lm_head_bias" is true) in float64, and compares it with
what ryzen-generate printed for one prompt:

  --gen-json FILE   ryzen-generate --json's output (prompt_ids, tokens[].id)
  --logits FILE     ryzen-generate --logits-out's float32 rows (one per prompt position, then
                    one per generated token but the last)
  --greedy          the run was greedy: our own 32-token (or --new) greedy continuation must be
                    the same token ids

It prints one line "max_rel=X rows=N greedy=same|differs|skipped" and exits 0 when the logits
agree within --rtol of each row's largest magnitude (and the greedy tokens are the same), 1
otherwise, 2 on bad input.
"""
import argparse
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F


def read_safetensors(path):
    """name -> float32 tensor (a copy), and the __metadata__ dict."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = bytearray(blob[8 + n:])
    tensors = {}
    for name, h in header.items():
        if h["dtype"] != "F32":
            raise ValueError(f"{path}: {name} has dtype {h['dtype']}, not F32")
        begin, end = h["data_offsets"]
        t = torch.frombuffer(data, dtype=torch.float32, count=(end - begin) // 4, offset=begin)
        tensors[name] = t.reshape(h["shape"]).clone()
    return tensors, meta


class GPT2:
    """GPT-2's forward pass over the exported weights, in float64."""

    def __init__(self, directory):
        with open(f"{directory}/config.json") as f:
            self.cfg = json.load(f)
        w, _ = read_safetensors(f"{directory}/model.safetensors")
        self.w = {k: v.double() for k, v in w.items()}
        c = self.cfg
        self.n_layer, self.n_head = c["n_layer"], c["n_head"]
        self.eps = c["layer_norm_epsilon"]
        act = c.get("activation_function", "gelu_new")
        self.act = {"gelu": lambda x: F.gelu(x),
                    "gelu_new": lambda x: F.gelu(x, approximate="tanh")}[act]
        tied = c.get("tie_word_embeddings", True)
        self.head = self.w["wte.weight"] if tied else self.w["lm_head.weight"]  # (V, C)
        self.head_bias = self.w["lm_head.bias"] if c.get("ryzen_lm_head_bias") else None

    def ln(self, x, name):
        return F.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"],
                            self.eps)

    def conv1d(self, x, name):
        # Conv1D: y = x W + b, W stored (in, out)
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def attention(self, x, i):
        T, C = x.shape
        H = self.n_head
        D = C // H
        q, k, v = self.conv1d(x, f"h.{i}.attn.c_attn").split(C, dim=-1)  # (T, C) each
        q, k, v = (t.reshape(T, H, D).transpose(0, 1) for t in (q, k, v))  # (H, T, D)
        s = q @ k.transpose(1, 2) / math.sqrt(D)  # (H, T, T)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float("-inf"))
        y = torch.softmax(s, dim=-1) @ v  # (H, T, D)
        return self.conv1d(y.transpose(0, 1).reshape(T, C), f"h.{i}.attn.c_proj")

    def mlp(self, x, i):
        return self.conv1d(self.act(self.conv1d(x, f"h.{i}.mlp.c_fc")), f"h.{i}.mlp.c_proj")

    def logits(self, ids):
        """(T, V) logits of token ids (T)."""
        ids = torch.tensor(ids, dtype=torch.long)
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][: len(ids)]  # (T, C)
        for i in range(self.n_layer):
            x = x + self.attention(self.ln(x, f"h.{i}.ln_1"), i)
            x = x + self.mlp(self.ln(x, f"h.{i}.ln_2"), i)
        y = self.ln(x, "ln_f") @ self.head.T  # (T, V)
        return y if self.head_bias is None else y + self.head_bias

    def greedy(self, ids, n):
        out = list(ids)
        for _ in range(n):
            out.append(int(torch.argmax(self.logits(out)[-1])))
        return out[len(ids):]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True, help="ryzen-ckpt export's output directory")
    p.add_argument("--gen-json", required=True)
    p.add_argument("--logits", required=True)
    p.add_argument("--greedy", action="store_true")
    p.add_argument("--rtol", type=float, default=1e-4)
    a = p.parse_args()
    torch.set_num_threads(1)
    model = GPT2(a.dir)
    with open(a.gen_json) as f:
        gen = json.load(f)
    prompt = gen["prompt_ids"]
    new = [t["id"] for t in gen["tokens"]]
    seq = prompt + new
    ref = model.logits(seq[:-1])  # one row per prompt position, then per new token but the last
    V = ref.shape[1]
    with open(a.logits, "rb") as f:
        raw = bytearray(f.read())
    ours = torch.frombuffer(raw, dtype=torch.float32).double()
    if ours.numel() != ref.numel():
        print(f"logits: {ours.numel()} values, expected {ref.shape[0]} rows of {V}")
        return 2
    ours = ours.reshape(ref.shape)
    scale = ref.abs().amax(dim=1, keepdim=True)  # each row's largest logit magnitude
    rel = ((ours - ref).abs() / scale).max().item()
    greedy = "skipped"
    ok = rel <= a.rtol
    if a.greedy:
        mine = model.greedy(prompt, len(new))
        greedy = "same" if mine == new else "differs"
        ok = ok and mine == new
        if mine != new:
            print(f"greedy: torch {mine}\n        ours  {new}")
    print(f"max_rel={rel:.3e} rows={ref.shape[0]} greedy={greedy}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
