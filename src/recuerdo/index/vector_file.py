"""The HNSW index of a memory's vectors, kept on disk so that reopening a memory does not
rebuild it (``docs/decisions/0015-persisted-vector-index.md``).

It is a cache: the store's ``embeddings`` rows are the truth, and this file is used only while
it provably describes them. :func:`index_home` says where it lives: beside a file store
(``<name>.db-vectors/``), in a local cache folder for a store without a local file, nowhere for
an in-memory store. In that folder, for each model (``<slug>`` is the model's name made safe):

* ``<slug>.<generation>.hnsw``: the usearch index (int8 vectors, keys are embedding ids), opened
  memory-mapped and read-only;
* ``<slug>.json``: the header, which says which data file is current and what it covers: the
  model and dimension, every vector of the model with an id up to ``covered``, the store's
  deletion mark it reflects, a few sample rows the store must hold unchanged, and the data
  file's size and CRC-32;
* ``.<slug>.lock``: serializes the processes writing the files.

Writing is atomic: a new generation is saved under a temporary name, flushed and renamed, then
the header is replaced the same way (the commit point), then older generations are removed. A
crash at any moment leaves the previous header and its data file whole.

Erasure: a forgotten vector's bytes must leave the files. usearch keeps a removed vector's
bytes in its freed slot, so after removing, zero vectors are added under placeholder keys (they
take the freed slots) and removed again; the saved file is then scanned, and the generation it
replaces is overwritten where it held those bytes before being deleted. If the scan still finds
them, every file goes (the index is rebuilt later): no file is better than one that remembers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store import durable_files

if TYPE_CHECKING:
    import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process at a time is assumed
    fcntl = None  # type: ignore[assignment]

FORMAT = 1
CACHE_ENV = "RECUERDO_VECTOR_CACHE"
SAMPLES = 8
PLACEHOLDER_KEY = 1 << 62
"""Keys from here up are never embedding ids: they hold freed slots while vectors are erased."""
CONNECTIVITY = 16
EXPANSION_ADD = 64
_MARK_NONCE = 1 << 30
_FOLDER_MODE = 0o700
_FILE_MODE = 0o600
_CHUNK = 1 << 24  # bytes read at a time for the CRC


def index_home(location: str) -> Path | None:
    """The folder of the persisted vector indexes of the store at ``location`` (its
    ``Store.location``), or None for a store that keeps nothing on disk (``:memory:``).

    A file store keeps them beside its file (``<file>-vectors``), so they travel and disappear
    with it. A store without a local file (a ``postgresql://`` URL) keeps them in a cache folder
    on this machine (``$RECUERDO_VECTOR_CACHE``, else ``$XDG_CACHE_HOME/recuerdo/vectors``, else
    ``~/.cache/recuerdo/vectors``), one folder per location. Change this function to put them
    elsewhere: what a folder holds is checked against the store before it is used."""
    if not location or location == ":memory:":
        return None
    if "://" not in location:
        return Path(location + "-vectors")
    root = os.environ.get(CACHE_ENV)
    if root is None:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(cache) / "recuerdo" / "vectors")
    return Path(root) / hashlib.sha256(location.encode()).hexdigest()[:32]


def next_mark(mark: int) -> int:
    """The deletion mark after ``mark``: a count in the high bits (so marks are ordered) and a
    random nonce in the low ones (so two copies of a store that each deleted something, as many
    times, still differ)."""
    nonce = int.from_bytes(os.urandom(4), "little") % _MARK_NONCE
    return ((mark // _MARK_NONCE) + 1) * _MARK_NONCE + nonce


def mark_order(mark: int) -> int:
    return mark // _MARK_NONCE


def row_digest(model: str, text_hash: bytes | str, vector: bytes) -> str:
    """What a sample row must still be: its model, its text's hash and its vector. The hash
    in hex, as it was stored before ``m022_binary_keys``: a saved index stays valid."""
    key = text_hash.hex() if isinstance(text_hash, bytes | memoryview) else text_hash
    digest = hashlib.sha256(f"{model}\0{key}\0".encode())
    digest.update(vector)
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Header:
    """What one data file covers (see the module's docstring)."""

    model: str
    dim: int
    location: str
    generation: int
    count: int
    covered: int
    deletions: int
    samples: tuple[tuple[int, str], ...]
    size: int
    crc: int
    format: int = FORMAT

    def dumps(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def loads(cls, text: str) -> Header | None:
        """The header in ``text``, or None when it is not one this version wrote whole."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict) or raw.get("format") != FORMAT:
                return None
            samples = tuple((int(i), str(d)) for i, d in raw["samples"])
            header = cls(
                model=str(raw["model"]),
                dim=int(raw["dim"]),
                location=str(raw["location"]),
                generation=int(raw["generation"]),
                count=int(raw["count"]),
                covered=int(raw["covered"]),
                deletions=int(raw["deletions"]),
                samples=samples,
                size=int(raw["size"]),
                crc=int(raw["crc"]),
            )
        except (ValueError, TypeError, KeyError):
            return None
        if min(header.dim, header.generation, header.count, header.size) < 1 or not samples:
            return None
        return header


def new_index(dim: int, expansion_search: int = 64) -> Any:
    Index = usearch_index()
    return Index(
        ndim=dim,
        metric="ip",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=expansion_search,
    )


def usearch_index() -> Any:
    """usearch's ``Index``, loaded after onnxruntime when that is installed: with usearch's
    native module loaded first, importing onnxruntime later kills the process (segmentation
    fault; usearch 2.26, onnxruntime 1.32), and a memory can open its HNSW before it loads a
    model (a large memory's first search by a query vector it was given)."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


def add_vectors(index: Any, ids: np.ndarray, matrix: np.ndarray, block: int = 65_536) -> None:
    """Add stored int8 vectors (usearch scales each to its own int8 range)."""
    import numpy as np

    for first in range(0, len(ids), block):
        part = slice(first, first + block)
        # In blocks: a million float32 copies at once would take 1.5 GiB.
        vectors = matrix[part].astype(np.float32) / 127.0
        index.add(ids[part].astype(np.uint64), vectors, threads=2)


_thread_locks: dict[Path, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


class IndexFiles:
    """One model's files in one folder."""

    def __init__(self, folder: Path, model: str, location: str) -> None:
        self.folder = folder
        self.model = model
        self.location = location
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
        self.slug = f"{slug}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
        self.header_path = folder / f"{self.slug}.json"

    def data_path(self, generation: int) -> Path:
        return self.folder / f"{self.slug}.{generation}.hnsw"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive use of the files: across processes (flock) and threads."""
        with _thread_locks_guard:
            local = _thread_locks.setdefault(self.header_path, threading.Lock())
        with local:
            if fcntl is None:  # pragma: no cover
                yield
                return
            _make_folder(self.folder)
            fd = os.open(self.folder / f".{self.slug}.lock", os.O_RDWR | os.O_CREAT, _FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the lock

    def header(self) -> Header | None:
        try:
            text = self.header_path.read_text()
        except (OSError, UnicodeDecodeError):
            return None
        header = Header.loads(text)
        if header is None or header.model != self.model:
            return None
        return header

    def open(self, header: Header, *, view: bool = True, verified: bool = False) -> Any | None:
        """The index of ``header``'s data file (memory-mapped when ``view``), or None when the
        file is missing, cut short, altered or not an index of that shape."""
        path = self.data_path(header.generation)
        try:
            if path.stat().st_size != header.size:
                return None
            if not verified and file_crc(path) != header.crc:
                return None
            index = usearch_index().restore(str(path), view=view)
        except (OSError, RuntimeError, ValueError):
            return None
        if index is None or index.ndim != header.dim or len(index) != header.count:
            return None
        return index

    def save(
        self,
        index: Any,
        *,
        covered: int,
        deletions: int,
        samples: Sequence[tuple[int, str]],
        previous: Header | None,
    ) -> Header:
        """Write ``index`` as a new generation and make it current (the caller holds the
        lock). Older generations stay until :meth:`tidy`."""
        _make_folder(self.folder)
        generation = max(self._generations(), default=0) + 1
        if previous is not None:
            generation = max(generation, previous.generation + 1)
        final = self.data_path(generation)
        temporary = final.with_name(final.name + ".tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE))
        try:
            index.save(str(temporary))
            durable_files.sync_file(temporary)
            crc = file_crc(temporary)
            size = temporary.stat().st_size
            os.replace(temporary, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            raise
        header = Header(
            model=self.model,
            dim=int(index.ndim),
            location=self.location,
            generation=generation,
            count=len(index),
            covered=covered,
            deletions=deletions,
            samples=tuple(samples),
            size=size,
            crc=crc,
        )
        self.commit(header)
        return header

    def commit(self, header: Header) -> None:
        """Make ``header`` the current one (atomically; the caller holds the lock)."""
        durable_files.sync_folder(
            self.folder
        )  # the data file's name is durable before the header names it
        temporary = self.header_path.with_name(self.header_path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _FILE_MODE)
        with os.fdopen(fd, "w") as out:
            out.write(header.dumps())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.header_path)
        durable_files.sync_folder(self.folder)

    def tidy(self, keep: int | None, erased: np.ndarray | None = None) -> None:
        """Delete every data file but generation ``keep`` (and leftovers of interrupted
        writes), first overwriting in them the vectors in ``erased`` (another process may still
        have one mapped)."""
        for path in self.folder.glob(f"{self.slug}.*.hnsw*"):
            if keep is not None and path == self.data_path(keep):
                continue
            if erased is not None and len(erased) and path.suffix == ".hnsw":
                with contextlib.suppress(OSError, ValueError):
                    scrub(path, erased)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def discard(self) -> None:
        """Remove the header, then every data file (caller holds the lock)."""
        with contextlib.suppress(FileNotFoundError):
            self.header_path.unlink()
        self.tidy(None)

    def _generations(self) -> list[int]:
        found = []
        for path in self.folder.glob(f"{self.slug}.*.hnsw*"):
            middle = path.name[len(self.slug) + 1 :].split(".")[0]
            if middle.isdigit():
                found.append(int(middle))
        return found


def _make_folder(folder: Path) -> None:
    if not folder.exists():
        with contextlib.suppress(FileExistsError):
            folder.mkdir(parents=True, mode=_FOLDER_MODE)


def file_crc(path: Path) -> int:
    crc = 0
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def _rows(buffer: Any, width: int) -> np.ndarray | None:
    """The vectors of a saved usearch index as a (slots, width) byte matrix over ``buffer``
    (usearch writes them first: two 32-bit counts, rows and bytes per row, then the rows in
    slot order), or None when the file does not start that way."""
    import numpy as np

    if len(buffer) < 8:
        return None
    rows, columns = (int(v) for v in np.frombuffer(buffer, dtype="<u4", count=2))
    if columns != width or 8 + rows * columns > len(buffer):
        return None
    matrix: np.ndarray = np.frombuffer(buffer, dtype=np.uint8, count=rows * columns, offset=8)
    return matrix.reshape(rows, columns)


def _matching(rows: np.ndarray, patterns: np.ndarray) -> np.ndarray:
    """Positions of the rows equal to one of ``patterns`` (both (n, width) uint8)."""
    import numpy as np

    width = rows.shape[1]
    head = min(8, width)

    def prefix(matrix: np.ndarray) -> np.ndarray:
        padded = np.zeros((len(matrix), 8), dtype=np.uint8)
        padded[:, :head] = matrix[:, :head]
        return padded.view("<u8").ravel()

    found = []
    wanted = prefix(patterns)
    for first in range(0, len(rows), 1 << 18):  # bounded temporary memory
        block = rows[first : first + (1 << 18)]
        for position in np.nonzero(np.isin(prefix(block), wanted))[0]:
            if (patterns == block[position]).all(axis=1).any():
                found.append(first + int(position))
    return np.asarray(found, dtype=np.int64)


def holds(path: Path, patterns: np.ndarray) -> bool:
    """Whether the data file at ``path`` holds one of ``patterns`` as a vector (True when it
    cannot tell)."""
    with path.open("rb") as source, mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as m:
        rows = _rows(m, patterns.shape[1])
        if rows is None:
            return True
        hit = len(_matching(rows, patterns)) > 0
        del rows
        return hit


def scrub(path: Path, patterns: np.ndarray) -> int:
    """Overwrite with zeros, in place, the vectors of the data file at ``path`` equal to one of
    ``patterns``; how many. A file of unknown shape is left as it is."""
    with path.open("r+b") as source, mmap.mmap(source.fileno(), 0) as m:
        rows = _rows(m, patterns.shape[1])
        if rows is None:
            return 0
        hits = _matching(rows, patterns)
        width = patterns.shape[1]
        for position in hits:
            start = 8 + int(position) * width
            m[start : start + width] = bytes(width)
        del rows
        m.flush()
        os.fsync(source.fileno())
        return len(hits)


def free_slots(index: Any, count: int) -> None:
    """Make ``count`` freed slots hold zeros: placeholders take them, then leave."""
    import numpy as np

    if not count:
        return
    keys = np.arange(PLACEHOLDER_KEY, PLACEHOLDER_KEY + count, dtype=np.uint64)
    index.add(keys, np.zeros((count, int(index.ndim)), dtype=np.int8), threads=2)
    index.remove(keys)


def _held_by_others(index: Any, patterns: np.ndarray) -> np.ndarray:
    """Which ``patterns`` are also the vector of a key still indexed (texts that differ only in
    what the model ignores, such as case, have the same vector): those bytes stay."""
    import numpy as np

    held = np.zeros(len(patterns), dtype=bool)
    if not len(index) or not len(patterns):
        return held
    found = index.search(patterns.view(np.int8), 4)
    for position, keys in enumerate(np.asarray(found.keys).reshape(len(patterns), -1)):
        live = [int(k) for k in keys if int(k) < PLACEHOLDER_KEY]
        vectors = index.get(np.asarray(live, dtype=np.uint64), dtype=np.int8) if live else ()
        held[position] = any(
            v is not None and np.array_equal(np.asarray(v).view(np.uint8), patterns[position])
            for v in vectors
        )
    return held


Sampler = Callable[[Sequence[int]], list[tuple[int, str]]]
"""Given embedding ids, the (id, digest) of those the store holds (see :func:`row_digest`)."""


def erase(
    files: IndexFiles, removed: Sequence[int], before: int, after: int, top: int, sample: Sampler
) -> str:
    """Take the vectors ``removed`` out of the files, for a deletion that moved the store's
    mark from ``before`` to ``after`` and left ``top`` as its highest embedding id. Returns what
    was done: ``none`` (no files), ``current`` (the files already reflect it), ``rewritten``
    or ``discarded`` (the files were behind, damaged, or kept the bytes)."""
    import numpy as np

    with files.locked():
        header = files.header()
        if header is None:
            files.tidy(None)  # data files without a header are leftovers: they hold vectors too
            return "none"
        if header.deletions == after or mark_order(header.deletions) > mark_order(after):
            return "current"  # written by a process that already saw this deletion
        if header.deletions != before:
            files.discard()  # behind an earlier deletion: which vectors it holds is unknown
            return "discarded"
        index = files.open(header, view=False)
        if index is None:
            files.discard()
            return "discarded"
        wanted = np.asarray(sorted(set(removed)), dtype=np.uint64)
        present = wanted[np.asarray(index.contains(wanted), dtype=bool)] if len(wanted) else wanted
        covered = min(header.covered, top)
        if not len(present):
            files.commit(replace(header, deletions=after, covered=covered))
            return "current"
        patterns = np.vstack(index.get(present, dtype=np.int8)).view(np.uint8)
        index.remove(present)
        free_slots(index, len(present))
        patterns = patterns[~_held_by_others(index, patterns)]
        gone = set(int(key) for key in present)
        samples = [pair for pair in header.samples if pair[0] not in gone]
        if len(samples) < SAMPLES and len(index):
            keys = np.asarray(index.keys, dtype=np.int64)
            picks = np.random.default_rng().choice(keys, min(len(keys), 4 * SAMPLES), False)
            known = {pair[0] for pair in samples}
            fresh = [pair for pair in sample([int(k) for k in picks]) if pair[0] not in known]
            samples += fresh[: SAMPLES - len(samples)]
        if not len(index) or not samples:
            files.discard()
            return "discarded"
        written = files.save(
            index, covered=covered, deletions=after, samples=samples, previous=header
        )
        if holds(files.data_path(written.generation), patterns):
            files.discard()  # this usearch kept the bytes somewhere: keep no file at all
            return "discarded"
        files.tidy(written.generation, erased=patterns)
        return "rewritten"
