"""A static embedding table distilled from the shipped MiniLM: the fast meaning tier.

A text's vector is the sum of one fixed vector per token, so embedding costs a tokenizer pass
and a few hundred row additions instead of a transformer pass (thousands of 200-word chunks a
second instead of about fifteen). The table is made from the model recuerdo already ships
(``recuerdo[embed]``), with nothing downloaded, in three steps (the method of model2vec,
written here from its description):

1. every token of the vocabulary goes through MiniLM alone (``[CLS] token [SEP]``); the mean of
   the three output vectors is the token's vector;
2. PCA: the vectors are centred and projected on their ``DIM`` main axes, which drops the
   direction every MiniLM output shares (it would make all texts look alike);
3. frequency weighting (SIF, ``a / (a + p)``): WordPiece vocabularies list words from the most
   frequent down, so a word's rank gives its probability by Zipf's law, and frequent words
   weigh almost nothing. Single ASCII characters (punctuation, digits, one-letter words) are
   counted as the most frequent tokens; special tokens weigh nothing.
4. each row is rounded to 8-bit integers on a scale of its own (its largest magnitude is 127).

The table is cached in ``RECUERDO_CACHE_DIR`` (default: the user's cache folder), keyed by the
hashes of the model and tokenizer files and the recipe. The package ships the table made from
the MiniLM that ``recuerdo[embed]`` installs (8-bit rows: a quarter of the cached float file),
so a first use unpacks it in a fraction of a second; a model file of another release, or a
shipped file that fails its checksum, is distilled here instead (half a minute of CPU). The
cache file is written whole and renamed into place, with a checksum that is checked at every
load (a damaged or stale file is made again); a lock file makes a second process starting at
the same moment wait and read the first one's table instead of making its own.

See ``docs/decisions/0014-static-embeddings.md`` and ``0039-shipped-static-table.md`` for the
measurements.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import os
import struct
import sys
import tempfile
import threading
import unicodedata
import weakref
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from .embed import minilm_files

if TYPE_CHECKING:
    import numpy as np

CACHE_ENV = "RECUERDO_CACHE_DIR"
RECIPE = "cls-token-sep mean; pca 256; sif 1e-4 zipf; int8 rows; v2"
"""Changing any step of the distillation changes this, hence the cache key and the name."""
DIM = 256
SIF_A = 1e-4
_DISTIL_BATCH = 2048
SHIPPED = Path(__file__).parent / "tables"
"""The tables the package ships (``python -m recuerdo.index.static --ship`` writes them)."""
Origin = Literal["cache", "package", "model"]
"""Where a loaded table came from: the cache as it was, unpacked from the package, or
distilled from the model just now."""
_READ_BLOCK = 1 << 20
_ROW_BYTES = DIM * 4  # float32
# Words already tokenized are kept, up to this many (about 100 bytes each), and this many of
# several tokens (1 KiB each); past either, all are forgotten at once.
_WORD_LIMIT = 200_000
_COMPOUND_ROWS = 32_768
_SPARE_ROWS = 1 + _COMPOUND_ROWS  # the zero row of words with no token, then compounds
# Beyond this many words a text's tail adds little to its direction; bounds one text's cost.
_MAX_WORDS = 20_000


def cache_dir() -> Path:
    """Where built tables live: ``RECUERDO_CACHE_DIR``, else the platform's user cache."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "recuerdo" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "recuerdo"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "recuerdo"


_digests: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    """The file's SHA-256, taken once per process for a given size and time of change (the
    23 MB model took 49 ms at every load; a pre-forking process's children inherit it)."""
    found = path.stat()
    known = (str(path.resolve()), found.st_size, found.st_mtime_ns)
    if known not in _digests:
        digest = hashlib.sha256()
        with path.open("rb") as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
        _digests[known] = digest.hexdigest()
    return _digests[known]


def source_key(model: Path, tokenizer: Path) -> str:
    """What the table is made from: both files and the recipe."""
    parts = [_file_digest(model), _file_digest(tokenizer), RECIPE]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _zipf_weights(tokens: list[str]) -> np.ndarray:
    """One SIF weight per token id, from its rank in the vocabulary (see the module's text)."""
    import numpy as np

    rank = np.zeros(len(tokens), dtype=np.float64)  # 0: never part of a text's meaning
    words = 0
    for token_id, token in enumerate(tokens):
        if len(token) > 2 and token.startswith("[") and token.endswith("]"):
            continue  # [PAD], [CLS], [unused12], ...
        if len(token) == 1 and (token.isascii() or unicodedata.category(token)[0] in "PSZC"):
            rank[token_id] = 1  # punctuation, digits, one-letter words: the most frequent
        elif len(token) == 1:
            # A letter of another script sits in the vocabulary's alphabet, before the
            # words: weighed like a word of middling frequency.
            rank[token_id] = 1000
        else:
            words += 1
            rank[token_id] = words
    harmonic = float(np.sum(1.0 / np.arange(1, max(words, 1) + 1)))
    probability = 1.0 / np.maximum(rank, 1) / harmonic
    weights: np.ndarray = np.where(rank > 0, SIF_A / (SIF_A + probability), 0.0)
    return weights


def distil(model: Path, tokenizer_file: Path, threads: int = 2) -> np.ndarray:
    """The static table (vocabulary x ``DIM``, float32), made from the model: see above."""
    import numpy as np
    import onnxruntime as ort
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    size = tokenizer.get_vocab_size()
    tokens = [tokenizer.id_to_token(i) or "" for i in range(size)]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_cpu_mem_arena = False
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    blocks = []
    for first in range(0, size, _DISTIL_BATCH):
        ids = np.arange(first, min(size, first + _DISTIL_BATCH), dtype=np.int64)
        inputs = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        hidden = session.run(
            None,
            {
                "input_ids": inputs,
                "attention_mask": np.ones_like(inputs),
                "token_type_ids": np.zeros_like(inputs),
            },
        )[0]
        blocks.append(hidden.mean(axis=1, dtype=np.float64))
    raw = np.concatenate(blocks)
    weights = _zipf_weights(tokens)
    # PCA over the tokens that can occur in text (special tokens would pull the mean).
    used = raw[weights > 0]
    mean = used.mean(axis=0)
    centred = used - mean
    values, axes = np.linalg.eigh(centred.T @ centred / len(used))
    axes = axes[:, np.argsort(values)[::-1][:DIM]]
    # An axis's sign is arbitrary: fix it so the same model gives the same table everywhere.
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(DIM)])
    axes *= np.where(signs == 0, 1.0, signs)
    table: np.ndarray = (((raw - mean) @ axes) * weights[:, None]).astype(np.float32)
    return table


def _to_int8(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, scales): each row rounded to int8 on its own scale, its largest magnitude over
    127 (a row of zeroes keeps scale 0)."""
    import numpy as np

    scales = (np.abs(table).max(axis=1) / 127).astype(np.float32)
    divisor = np.where(scales > 0, scales, np.float32(1))
    rows = np.clip(np.rint(table / divisor[:, None]), -127, 127).astype(np.int8)
    return rows, scales


def _from_int8(rows: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The float32 table of rounded rows (what the cache holds and the embedder reads)."""
    import numpy as np

    table: np.ndarray = rows.astype(np.float32) * scales[:, None]
    return table


def _shipped_digest(rows: np.ndarray, scales: np.ndarray) -> bytes:
    return hashlib.sha256(rows.data).digest() + hashlib.sha256(scales.data).digest()


def _table_digest(table: np.ndarray) -> bytes:
    # Over the array's own buffer: ``tobytes()`` would hold a second 31 MB copy.
    return hashlib.sha256(table.data).digest()


class Table:
    """The token rows of a cached table, read from its file when first needed.

    A server meets a few thousand of the 30,522 tokens (5,855 at 10,000 LoCoMo notes), so
    reading the whole table (31 MB) made most of it resident for nothing. The file is checked
    whole when opened (its digest, streamed a block at a time); its rows are then read as
    words need them, from the same open file (a rebuilt table is renamed into place, so this
    one's bytes never change under it)."""

    def __init__(self, fd: int, offset: int, vocabulary: int) -> None:
        self.vocabulary = vocabulary
        self._fd = fd
        self._offset = offset
        self._seek = threading.Lock()  # where there is no pread, reads take turns
        # Closed when the table is dropped, but never by the interpreter's exit functions:
        # code that runs after them (the upkeep worker they wait for, an exit handler that
        # searches) still reads rows, and the process's end closes the file anyway.
        weakref.finalize(self, os.close, fd).atexit = False

    def _row(self, token: int) -> bytes:
        at = self._offset + token * _ROW_BYTES
        if hasattr(os, "pread"):
            return os.pread(self._fd, _ROW_BYTES, at)
        with self._seek:  # pragma: no cover - Windows
            os.lseek(self._fd, at, os.SEEK_SET)
            return os.read(self._fd, _ROW_BYTES)

    def read(self, ids: np.ndarray, into: np.ndarray) -> None:
        """Rows ``ids`` of the table into the same rows of ``into`` (a float32 matrix)."""
        import numpy as np

        for token in ids.tolist():
            data = self._row(token)
            if len(data) != _ROW_BYTES:
                raise OSError(f"the static table file was cut short (row {token})")
            into[token] = np.frombuffer(data, dtype="<f4")

    def whole(self) -> np.ndarray:
        """Every row (vocabulary x ``DIM``): for a check, never for serving."""
        import numpy as np

        table = np.empty((self.vocabulary, DIM), dtype=np.float32)
        self.read(np.arange(self.vocabulary), table)
        return table


def _member_offset(raw: IO[bytes], archive: zipfile.ZipFile, name: str) -> int | None:
    """Where an uncompressed zip member's bytes start in the file, else None."""
    info = archive.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    raw.seek(info.header_offset)
    header = raw.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return int(info.header_offset) + 30 + int(name_length) + int(extra_length)


def _read(path: Path, key: str) -> Table | None:
    """The cached table, or None when it is missing, damaged or made from something else.
    The digest is taken over the file's rows a block at a time: none of them is kept, so
    checking costs no memory (the server's peak). Everything is read through one open file,
    the one the rows are read from later (a rebuild renames a new file into place)."""
    import numpy as np

    fd = -1
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        with os.fdopen(os.dup(fd), "rb") as raw:
            with zipfile.ZipFile(raw) as archive:
                stored_key = np.lib.format.read_array(archive.open("key.npy"), allow_pickle=False)
                if bytes(stored_key).decode() != key:
                    return None
                digest = np.lib.format.read_array(archive.open("digest.npy"), allow_pickle=False)
                start = _member_offset(raw, archive, "table.npy")
                size = archive.getinfo("table.npy").file_size
            if start is None:
                return None
            raw.seek(start)
            if np.lib.format.read_magic(raw) != (1, 0):
                return None
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
            if fortran or dtype != np.dtype("<f4") or len(shape) != 2 or shape[1] != DIM:
                return None
            offset = raw.tell()
            if offset - start + shape[0] * _ROW_BYTES != size:
                return None
            checked = hashlib.sha256()
            left = shape[0] * _ROW_BYTES
            while left:
                block = raw.read(min(_READ_BLOCK, left))
                if not block:
                    return None
                checked.update(block)
                left -= len(block)
        if bytes(digest) != checked.digest():
            return None
        table, fd = Table(fd, offset, shape[0]), -1
        return table
    except Exception:
        # Missing, truncated or garbled (numpy and zipfile raise many kinds): rebuilt.
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _write(path: Path, key: str, table: np.ndarray) -> None:
    """Write whole, then rename: a reader sees the old file, or none, or the new one."""
    import numpy as np

    buffer = io.BytesIO()
    np.savez(
        buffer,
        table=table,
        key=np.frombuffer(key.encode(), dtype=np.uint8),
        digest=np.frombuffer(_table_digest(table), dtype=np.uint8),
    )
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(buffer.getvalue())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an OS lock on ``lock_path`` (where there is one: elsewhere two first uses both
    build, and the atomic rename still leaves one whole file)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def table_path(key: str, folder: Path | None = None) -> Path:
    """Where the table made from the files of ``key`` (:func:`source_key`) is cached."""
    return (folder or cache_dir()) / f"static-minilm-{key[:16]}.npz"


def shipped_path(key: str, folder: Path = SHIPPED) -> Path:
    """Where the package keeps the table made from the files of ``key``, if it ships one."""
    return folder / f"static-minilm-{key[:16]}.npz"


def _unpack(path: Path, key: str) -> np.ndarray | None:
    """The float32 table of a shipped file, or None when it is missing, damaged or made from
    something else (the table is then distilled instead)."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as shipped:
            if bytes(shipped["key"]).decode() != key:
                return None
            rows, scales = shipped["rows"], shipped["scales"]
            digest = bytes(shipped["digest"])
    except Exception:
        return None  # missing, truncated or garbled: numpy and zipfile raise many kinds
    if (
        rows.dtype != np.int8
        or scales.dtype != np.float32
        or rows.ndim != 2
        or rows.shape[1] != DIM
        or scales.shape != (rows.shape[0],)
        or _shipped_digest(rows, scales) != digest
    ):
        return None
    return _from_int8(rows, scales)


def load_table(
    model: Path, tokenizer: Path, folder: Path | None = None, shipped: Path = SHIPPED
) -> tuple[str, Table, Origin]:
    """(key, table, origin): the cached table for these files, unpacked from the package's
    tables (``shipped``) or distilled from the model first when it is missing or bad."""
    key = source_key(model, tokenizer)
    path = table_path(key, folder)
    folder = path.parent
    table = _read(path, key)
    if table is not None:
        return key, table, "cache"
    folder.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder / f"{path.name}.lock"):
        table = _read(path, key)  # another process may have made it while we waited
        if table is not None:
            return key, table, "cache"
        origin: Origin = "package"
        made = _unpack(shipped_path(key, shipped), key)
        if made is None:
            origin, made = "model", _from_int8(*_to_int8(distil(model, tokenizer)))
        _write(path, key, made)
        del made  # served from the file like any cached table, not kept resident
        table = _read(path, key)
        if table is None:
            raise OSError(f"the static table just written to {path} does not read back")
        return key, table, origin


def ship(folder: Path = SHIPPED, files: tuple[Path, Path] | None = None) -> Path:
    """Distil the table of the installed MiniLM (or of ``files``: model, tokenizer) and write
    it as the package ships it (int8 rows and their scales, compressed); tables of other
    models leave the folder."""
    import numpy as np

    model, tokenizer = files or minilm_files()
    key = source_key(model, tokenizer)
    rows, scales = _to_int8(distil(model, tokenizer))
    path = shipped_path(key, folder)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        rows=rows,
        scales=scales,
        key=np.frombuffer(key.encode(), dtype=np.uint8),
        digest=np.frombuffer(_shipped_digest(rows, scales), dtype=np.uint8),
    )
    for old in folder.glob("static-minilm-*.npz"):
        if old != path:
            old.unlink()
    return path


def _zeroed(rows: int) -> np.ndarray:
    """A float32 matrix of zeroes whose pages the system maps only when written, 4 KiB at a
    time. (numpy asks for 2 MiB pages for a large array: then the first row read into each
    2 MiB would make all of it resident, and the rows a server reads are spread over the
    whole table.) Private: an anonymous map is shared by default, and a process forked after
    this one loaded its words would write its own into the same rows."""
    import numpy as np

    size = rows * _ROW_BYTES
    if hasattr(mmap, "MAP_PRIVATE"):
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    else:  # pragma: no cover - Windows, where no process is forked from this one
        buffer = mmap.mmap(-1, size)
    with contextlib.suppress(AttributeError, OSError):  # Linux only; elsewhere small pages
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype=np.float32).reshape(rows, DIM)


class _Words:
    """Words seen so far, each with one row of ``matrix``: a word of one token has its token's
    row; a word of several tokens gets a row of its own holding their sum (so a text costs
    one dictionary look-up and one row per word); a word of none, the zero row.

    ``matrix`` is the table's rows, then the zero row and the compound rows. It starts as
    zeroes the system maps only when written, and a token's row is read from the table the
    first time a word needs it: untouched rows never take memory."""

    def __init__(self, table: Table, previous: _Words | None = None) -> None:
        import numpy as np

        self.table = table
        self.vocabulary = table.vocabulary
        self.matrix = _zeroed(self.vocabulary + _SPARE_ROWS)
        self.loaded = np.zeros(self.vocabulary, dtype=bool)
        if previous is not None:  # the token rows already read stay, the compounds go
            self.loaded[:] = previous.loaded
            self.matrix[: self.vocabulary][self.loaded] = previous.matrix[: self.vocabulary][
                self.loaded
            ]
        self.rows: dict[str, int] = {}
        self.free = self.vocabulary + 1  # row ``vocabulary`` stays zero

    def has_room(self, count: int) -> bool:
        return len(self.rows) + count <= _WORD_LIMIT and self.free + count <= len(self.matrix)

    def load(self, ids: Iterable[int]) -> None:
        """Read the rows of these tokens not read yet."""
        import numpy as np

        wanted = np.unique(np.fromiter(ids, dtype=np.intp))
        missing = wanted[~self.loaded[wanted]]
        if len(missing):
            self.table.read(missing, self.matrix)
            self.loaded[missing] = True

    def add(self, word: str, ids: list[int]) -> None:
        """``word``, whose tokens' rows are read (:meth:`load`)."""
        if len(ids) == 1:
            row = ids[0]
        elif not ids:
            row = self.vocabulary
        else:
            row = self.free
            self.matrix[row] = self.matrix[ids].sum(axis=0)
            self.free += 1
        self.rows[word] = row  # after the row is written: readers never see it half-made


class StaticMiniLM:
    """Static token vectors distilled from all-MiniLM-L6-v2: a sum of token vectors, normalised.

    The same vector for a text as a query or as a passage (the table knows no difference). A
    text with no word the table weighs (empty, or only special tokens) gets the zero vector,
    which is near nothing."""

    dim = DIM
    min_similarity = 0.3
    # At 1.0 its ranks lowered LoCoMo recall below the words' alone; of 1.0, 0.7, 0.5 and 0.3,
    # 0.7 alone raised R@5 and R@10 on both halves of the conversations (docs/decisions/0191).
    fusion_weight = 0.7

    def __init__(self, folder: Path | None = None) -> None:
        import tokenizers

        model, tokenizer_file = minilm_files()
        key, table, self.origin = load_table(model, tokenizer_file, folder)
        self.name = f"static-minilm-{key[:12]}"
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._words = _Words(table)
        self._lock = threading.Lock()

    def _learn(self, words: list[str]) -> _Words:
        """Tokenize the words not seen before (the tokenizer splits punctuation, lowercases,
        strips accents and cuts word pieces exactly as for MiniLM); the word table that now
        holds all of ``words``."""
        with self._lock:
            known = self._words
            new = [word for word in dict.fromkeys(words) if word not in known.rows]
            if not known.has_room(len(new)):
                # Start again rather than grow without end (a stream of ids or hashes never
                # repeats); texts being embedded keep the table they started with.
                known = self._words = _Words(known.table, known)
                new = list(dict.fromkeys(words))
            encoded = self._tokenizer.encode_batch(new, add_special_tokens=False)
            known.load(token for tokens in encoded for token in tokens.ids)
            for word, tokens in zip(new, encoded, strict=True):
                known.add(word, tokens.ids)
            return known

    def _rows(self, text: str) -> tuple[_Words, np.ndarray]:
        import numpy as np

        words = text.split()[:_MAX_WORDS]
        known = self._words
        try:
            rows = np.fromiter(map(known.rows.__getitem__, words), np.intp, len(words))
        except KeyError:
            known = self._learn(words)
            rows = np.fromiter(map(known.rows.__getitem__, words), np.intp, len(words))
        return known, rows

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        from .embed import _normalise

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            known, rows = self._rows(text)
            if len(rows):
                out[row] = known.matrix[rows].sum(axis=0)
        return _normalise(out)


def _main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m recuerdo.index.static",
        description="Make the static table ready in the cache (unpacked or distilled), or, with "
        "--ship, distil it into the package's tables (after the model's package changed).",
    )
    parser.add_argument("--ship", action="store_true", help=f"write the table into {SHIPPED}")
    if parser.parse_args(argv).ship:
        print(f"shipped: {ship()}")
        return
    ready = StaticMiniLM()
    said = {"cache": "already cached", "package": "unpacked", "model": "distilled"}[ready.origin]
    print(f"{ready.name}: {said} in {cache_dir()}")


if __name__ == "__main__":  # ``python -m recuerdo.index.static``: ready at install time
    _main(sys.argv[1:])
