"""Fine-tune the top transformer layer(s) of all-MiniLM-L6-v2 for the semantic layer (training only).

The one module of the project that uses torch. Nothing else imports it, and it runs in its own virtual
environment, so neither the runtime nor CI needs torch (docs/safety.md, "Fine-tuning the encoder"):

    python3 -m venv /work/train-venv && /work/train-venv/bin/pip install torch==2.13.0 numpy
    PYTHONPATH=$PWD .venv/bin/python -m launcher.safety._train --dump-states /tmp/states.npz --top 1
    /work/train-venv/bin/python launcher/safety/_finetune.py /tmp/states.npz /tmp/top.npz [--cv 5]
    PYTHONPATH=$PWD .venv/bin/python -m launcher.safety._train --overrides /tmp/top.npz --cache /tmp/ft.npz

Input (``--dump-states`` of :mod:`launcher.safety._train`): the hidden states of every training example
below the top layers (computed once by the numpy encoder, so an epoch runs only the top), their
labels and cross-validation folds, and the top layers' weights. The top layers and a linear softmax
head over the families (on the mean-pooled, L2-normalised embedding, as the shipped head sees it) are
trained jointly with cross-entropy: Adam, fixed seed, fixed batch order, :data:`THREADS` threads and
deterministic algorithms, so a re-run gives the same weights. The proxy head is thrown away; the
shipped head is refit by ``_train`` on embeddings made with the new layers.

Output: the top layers' weights in float16 by state-dict name (the numpy encoder loads them as
overrides) and ``report`` (JSON): the settings, the loss per epoch, with ``--cv`` the out-of-fold
figures of the fine-tuned and of the frozen encoder (same head, same schedule), and ``parity_max_abs``,
the largest difference between torch's and numpy's (:mod:`._bert`) embeddings of 64 examples with the
same float16 weights (refused over :data:`PARITY_TOL`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

SEED, THREADS = 0, 2
EPOCHS, BATCH, LR_LAYER, LR_HEAD = 3, 32, 3e-5, 3e-3
PARITY_TOL = 1e-4
NAMES = (
    "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
    "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm",
)  # fmt: skip


class Top(nn.Module):
    """BERT's post-LayerNorm layers over padded ``(batch, tokens, 384)`` states with a padding mask."""

    def __init__(self, n: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.layers = nn.ModuleList()
        for _ in range(n):
            m = nn.ModuleDict({k.replace(".", "_"): nn.Linear(384, 384) for k in NAMES[:4]})
            m["attention_output_LayerNorm"] = nn.LayerNorm(384, eps=eps)
            m["intermediate_dense"] = nn.Linear(384, 1536)
            m["output_dense"] = nn.Linear(1536, 384)
            m["output_LayerNorm"] = nn.LayerNorm(384, eps=eps)
            self.layers.append(m)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h, d = self.heads, 384 // self.heads
        bias = (~mask)[:, None, None, :].float() * -1e9
        for m in self.layers:
            q, k, v = (
                m[f"attention_self_{n}"](x).view(b, t, h, d).transpose(1, 2)
                for n in ("query", "key", "value")
            )
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1) @ v
            x = m["attention_output_LayerNorm"](
                m["attention_output_dense"](a.transpose(1, 2).reshape(b, t, 384)) + x
            )
            u = nn.functional.gelu(m["intermediate_dense"](x))
            x = m["output_LayerNorm"](m["output_dense"](u) + x)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return nn.functional.normalize(pooled, dim=-1)


def _load(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _init(top: Top, d: dict[str, Any], first: int) -> None:
    with torch.no_grad():
        for i, m in enumerate(top.layers):
            for n in NAMES:
                mod = m[n.replace(".", "_")]
                mod.weight.copy_(
                    torch.from_numpy(np.asarray(d[f"w:encoder.layer.{first + i}.{n}.weight"], np.float32))
                )
                mod.bias.copy_(
                    torch.from_numpy(np.asarray(d[f"w:encoder.layer.{first + i}.{n}.bias"], np.float32))
                )


def _batch(
    states: np.ndarray, offs: np.ndarray, lens: np.ndarray, idx: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    t = int(lens[idx].max())
    x = np.zeros((len(idx), t, 384), np.float32)
    mask = np.zeros((len(idx), t), bool)
    for r, i in enumerate(idx):
        x[r, : lens[i]] = states[offs[i] : offs[i] + lens[i]]
        mask[r, : lens[i]] = True
    return torch.from_numpy(x), torch.from_numpy(mask)


def _order(idx: np.ndarray, lens: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of ``idx``: shuffled, then sorted by length within groups of 20 batches (less padding)."""
    idx = rng.permutation(idx)
    out = []
    group = 20 * BATCH
    for g in range(0, len(idx), group):
        chunk = idx[g : g + group]
        chunk = chunk[np.argsort(lens[chunk], kind="stable")]
        out += [chunk[s : s + BATCH] for s in range(0, len(chunk), BATCH)]
    return [out[i] for i in rng.permutation(len(out))]


def train(d: dict[str, Any], idx: np.ndarray, *, tune: bool, log: list[object]) -> tuple[Top, nn.Linear]:
    """Train the top layers (``tune``; else frozen) and a proxy head on examples ``idx``."""
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    first, lens, y = int(d["first"]), d["lens"], torch.from_numpy(d["y"])
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    top = Top(len(d["w_names"]), int(d["heads"]), float(d["eps"]))
    _init(top, d, first)
    head = nn.Linear(384, int(d["classes"]))
    params = [{"params": head.parameters(), "lr": LR_HEAD}]
    if tune:
        params.append({"params": top.parameters(), "lr": LR_LAYER})
    else:
        top.requires_grad_(False)
    opt = torch.optim.Adam(params)
    for epoch in range(EPOCHS):
        t0, total = time.time(), 0.0
        for b in _order(idx, lens, rng):
            x, mask = _batch(d["states"], offs, lens, b)
            loss = nn.functional.cross_entropy(head(top(x, mask)) * 20.0, y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
        log.append(
            {"tune": tune, "epoch": epoch, "loss": total / len(idx), "seconds": round(time.time() - t0, 1)}
        )
        print(log[-1], flush=True)
    return top, head


def _predict(top: Top, head: nn.Linear, d: dict[str, Any], idx: np.ndarray) -> np.ndarray:
    lens = d["lens"]
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    out = []
    with torch.no_grad():
        for s in range(0, len(idx), 256):
            x, mask = _batch(d["states"], offs, lens, idx[s : s + 256])
            out.append(torch.softmax(head(top(x, mask)) * 20.0, -1).numpy())
    return np.concatenate(out)


def _figures(p: np.ndarray, y: np.ndarray, tiers: np.ndarray) -> dict[str, float]:
    risk = p[:, tiers >= 2].sum(1)
    t3 = p[:, tiers == 3].sum(1)
    pos, pos3 = tiers[y] >= 2, tiers[y] == 3
    return {
        "family_accuracy": float((p.argmax(1) == y).mean()),
        "recall_ge2_at_0.5": float((risk[pos] >= 0.5).mean()),
        "recall_t3_at_0.5": float((t3[pos3] >= 0.5).mean()),
        "false_ge2_at_0.5": float((risk[~pos] >= 0.5).mean()),
    }


def cross_validate(d: dict[str, Any], log: list[object], n_folds: int) -> dict[str, object]:
    """Out-of-fold figures of the fine-tuned and the frozen encoder (the same proxy head and schedule),
    over the first ``n_folds`` folds (each one trains on all the other folds)."""
    y, folds, tiers = d["y"], d["folds"], d["tiers"]
    scored = folds < n_folds
    out: dict[str, object] = {"folds_scored": n_folds, "examples_scored": int(scored.sum())}
    for tune in (False, True):
        p = np.zeros((len(y), int(d["classes"])))
        for f in range(n_folds):
            top, head = train(d, np.flatnonzero(folds != f), tune=tune, log=log)
            p[folds == f] = _predict(top, head, d, np.flatnonzero(folds == f))
        out["finetuned" if tune else "frozen"] = _figures(p[scored], y[scored], tiers)
        print(out, flush=True)
    return out


def _numpy_bert(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_bert_np", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_bert_np"] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def parity(top: Top, weights: dict[str, np.ndarray], d: dict[str, Any]) -> float:
    """Largest |torch - numpy| over the embeddings of the first 64 examples, both with ``weights``."""
    bert_mod = _numpy_bert(Path(__file__).with_name("_bert.py"))
    first = int(d["first"])
    get = lambda n: np.ascontiguousarray(weights[n], dtype=np.float32)  # noqa: E731
    bert = object.__new__(bert_mod.Bert)  # only the top layers: no embeddings table is needed
    bert.layers = [
        bert_mod.Layer.from_weights(get, f"encoder.layer.{first + i}.") for i in range(len(top.layers))
    ]
    bert.heads, bert.eps, bert.max_len, bert.chunk_tokens = int(d["heads"]), float(d["eps"]), 512, 1024
    bert.inter = bert.layers[0].up_w.shape[1]
    bert._local = __import__("threading").local()
    lens = d["lens"][:64]
    ours = bert.embed_states(d["parity_states"], lens, 0)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    with torch.no_grad():
        x, mask = _batch(d["parity_states"], offs, lens, np.arange(64))
        theirs = top(x, mask).numpy()
    return float(np.abs(ours - theirs).max())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("states", type=Path, help="the file written by _train --dump-states")
    ap.add_argument("out", type=Path, help="where the float16 top-layer weights and the report go (.npz)")
    ap.add_argument(
        "--cv",
        type=int,
        default=0,
        metavar="N",
        help="also out-of-fold figures on the first N of the 5 folds, fine-tuned against frozen",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    d = _load(args.states)
    first = int(d["first"])
    d["w_names"] = sorted({k.split(".")[2] for k in d if k.startswith("w:")})
    d["classes"] = len(d["tiers"])
    d["states"] = d["states"].astype(np.float32)
    log: list[object] = []
    report: dict[str, object] = {
        "epochs": EPOCHS, "batch": BATCH, "lr_layer": LR_LAYER, "lr_head": LR_HEAD, "seed": SEED,
        "top_layers": len(d["w_names"]), "examples": len(d["y"]), "torch": torch.__version__,
    }  # fmt: skip
    if args.cv:
        report["cv"] = cross_validate(d, log, args.cv)
    top, _ = train(d, np.arange(len(d["y"])), tune=True, log=log)
    weights: dict[str, Any] = {}
    for i, m in enumerate(top.layers):
        for n in NAMES:
            mod = m[n.replace(".", "_")]
            for part in ("weight", "bias"):
                weights[f"encoder.layer.{first + i}.{n}.{part}"] = (
                    getattr(mod, part).detach().numpy().astype(np.float16)
                )
    _init(top, {f"w:{k}": v for k, v in weights.items()}, first)  # torch now holds the float16 weights too
    report["parity_max_abs"] = err = parity(top, weights, d)
    report["log"] = log
    print(f"parity numpy vs torch: max |diff| {err:.2e}", flush=True)
    if not err <= PARITY_TOL:
        print(f"error: numpy and torch embeddings differ by {err:.2e} > {PARITY_TOL}", file=sys.stderr)
        return 1
    np.savez(args.out, report=np.array(json.dumps(report)), **weights)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
