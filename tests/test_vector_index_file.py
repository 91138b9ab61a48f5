"""The HNSW index saved beside a memory: a reopened memory maps it instead of rebuilding it,
catches up with what was stored since (by this process or another), never trusts a file that
does not describe its store, survives a crash while saving, and forgets with the store: a
forgotten vector's bytes leave every file of the index before forget returns.

Sets are made large by lowering ``EXACT_LIMIT``; the embedder gives each text a fixed random
unit vector, so answers can be checked against an exact search of the stored vectors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

import recuerdo
from recuerdo.index import vector_file, vector_set, vectors

from .conftest import ROOT
from .forks import python_command

DIM = 16
LIMIT = 20  # EXACT_LIMIT in these tests: above it, sets are searched through the HNSW


class HashEmbedder:
    """Each text's vector is random, fixed by the text (the same in every process)."""

    name = "test-hash-16"
    dim = DIM
    min_similarity = -1.0
    fusion_weight = 1.0

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        return np.vstack([unit(text) for text in texts]).astype(np.float32)


def unit(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    raw = np.random.default_rng(seed).normal(size=DIM)
    return (raw / np.linalg.norm(raw)).astype(np.float32)


@pytest.fixture(autouse=True)
def _large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "EXACT_LIMIT", LIMIT)
    monkeypatch.setattr(vectors, "ERASURE_WAIT", 0.2)


def text(number: int) -> str:
    return f"note number {number} about topic {number * 7919 % 1000}"


def open_memory(base: Path) -> recuerdo.Memory:
    return recuerdo.open("big", base_dir=base, embedder=HashEmbedder())


def fill(memory: recuerdo.Memory, numbers: range) -> list[int]:
    ids = memory.remember_many([{"category": "learning", "content": text(n)} for n in numbers])
    memory._upkeep.drain()  # chunked and embedded
    return ids


def search(memory: recuerdo.Memory, query: str, k: int = 5) -> list[int]:
    """The items the meaning stage finds, best first."""
    reply = memory.search(query, stages=["meaning"], limit=k)
    return [hit["id"] for hit in reply["results"]]


def exact(memory: recuerdo.Memory, query: str, k: int = 5) -> list[int]:
    """The same answer from every stored vector, exactly."""
    wanted = unit(query)
    with memory._store.read() as tx:
        rows = tx.all(
            "SELECT c.item_id, e.vector FROM embeddings e JOIN chunks c ON c.hash = e.hash"
            " WHERE e.model = ?",
            (HashEmbedder.name,),
        )
    scored = []
    for row in rows:
        scale, quantized = vectors.decode(bytes(row["vector"]))
        scored.append((float(quantized.astype(np.float32) @ wanted) * scale, row["item_id"]))
    return [item for _, item in sorted(scored, reverse=True)[:k]]


def folder(memory_or_base: recuerdo.Memory | Path) -> Path:
    if isinstance(memory_or_base, Path):
        return memory_or_base / ".recuerdo" / "state" / "big.db-vectors"
    return Path(memory_or_base.location + "-vectors")


def header(where: Path) -> dict:  # type: ignore[type-arg]
    [path] = where.glob("*.json")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def data_file(where: Path) -> Path:
    found = header(where)
    [path] = where.glob(f"*.{found['generation']}.hnsw")
    return path


def saved(memory: recuerdo.Memory) -> None:
    """Wait for the generation being written in the background."""
    memory._meaning.close()


@pytest.fixture
def built(base: Path) -> Iterator[Path]:
    """A memory of 60 notes whose index was built and saved, then closed."""
    with open_memory(base) as memory:
        fill(memory, range(60))
        assert search(memory, text(3)) == exact(memory, text(3))
        saved(memory)
    yield base


def test_a_large_set_is_built_once_and_saved_beside_the_store(base: Path) -> None:
    before = vectors.STATS.copy()
    with open_memory(base) as memory:
        fill(memory, range(60))
        search(memory, text(1))
        saved(memory)
        found = header(folder(memory))
    assert vectors.STATS["built"] - before["built"] == 1
    assert vectors.STATS["saved"] - before["saved"] == 1
    assert found["count"] == 60 and found["dim"] == DIM and found["model"] == HashEmbedder.name
    assert found["location"].endswith("big.db")
    assert oct(folder(base).stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("query", [text(0), text(31), text(59), "a question never stored"])
def test_reopening_maps_the_saved_index_and_answers_like_an_exact_search(
    built: Path, query: str
) -> None:
    where = folder(built)
    before, stat = vectors.STATS.copy(), data_file(where).stat()
    with open_memory(built) as memory:
        assert search(memory, query) == exact(memory, query)
        saved(memory)
    assert vectors.STATS["built"] == before["built"]  # not rebuilt
    assert vectors.STATS["opened"] - before["opened"] == 1
    after = data_file(where).stat()
    assert (after.st_ino, after.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)


def test_another_process_writes_and_the_reopened_index_catches_up(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = f"""
import recuerdo
from tests.test_vector_index_file import HashEmbedder, text
with recuerdo.open("big", base_dir={str(built)!r}, embedder=HashEmbedder()) as memory:
    memory.remember_many([{{"category": "learning", "content": text(n)}} for n in range(60, 75)])
"""
    done = subprocess.run(
        python_command(script), cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.setattr(vectors, "DELTA_LIMIT", 10)  # 15 new vectors: a new generation is due
    where = folder(built)
    before, generation = vectors.STATS.copy(), header(where)["generation"]
    with open_memory(built) as memory:
        for query in (text(70), text(5), text(74)):
            assert search(memory, query) == exact(memory, query)
        assert search(memory, text(70), k=1) == exact(memory, text(70), k=1)
        saved(memory)
    assert vectors.STATS["built"] == before["built"]
    assert vectors.STATS["saved"] - before["saved"] == 1
    now = header(where)
    assert now["generation"] > generation and now["count"] == 75
    assert len(list(where.glob("*.hnsw"))) == 1  # the older generation is gone
    with open_memory(built) as memory:
        assert search(memory, text(66)) == exact(memory, text(66))
    assert vectors.STATS["built"] == before["built"]


def test_a_second_handle_sees_vectors_written_after_it_opened(built: Path) -> None:
    with open_memory(built) as reader, open_memory(built) as writer:
        assert search(reader, text(2)) == exact(reader, text(2))
        fill(writer, range(60, 70))
        assert search(reader, text(65), k=1) == exact(writer, text(65), k=1)


def test_the_memory_size_counts_its_saved_index(built: Path) -> None:
    """``recuerdo memories`` and the lens show what a memory takes on disk: the saved index is
    part of it (it travels and goes with the file)."""
    store = built / ".recuerdo" / "state" / "big.db"
    index_bytes = sum(p.stat().st_size for p in folder(built).iterdir() if p.is_file())
    assert index_bytes > 0
    file_bytes = sum(p.stat().st_size for p in (store, store.with_name("big.db-wal")) if p.exists())
    assert recuerdo.engine.state_size("big", built) == file_bytes + index_bytes


def _truncate(where: Path, base: Path) -> None:
    path = data_file(where)
    path.write_bytes(path.read_bytes()[:-100])


def _flip_a_byte(where: Path, base: Path) -> None:
    path = data_file(where)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x55
    path.write_bytes(bytes(raw))


def _garbage_header(where: Path, base: Path) -> None:
    [path] = where.glob("*.json")
    path.write_text(path.read_text()[:40])


def _sample_changed(where: Path, base: Path) -> None:
    [path] = where.glob("*.json")
    found = json.loads(path.read_text())
    found["samples"][0][1] = "0" * 32
    path.write_text(json.dumps(found))


def _another_store_same_name(where: Path, base: Path) -> None:
    """Another memory's file put where this one was (its index folder left behind)."""
    other = base.parent / "other"
    with recuerdo.open("big", base_dir=other, embedder=HashEmbedder()) as memory:
        fill(memory, range(1000, 1060))
    state = base / ".recuerdo" / "state"
    for suffix in ("", "-wal", "-shm"):
        (state / f"big.db{suffix}").unlink(missing_ok=True)
    shutil.copy(other / ".recuerdo" / "state" / "big.db", state / "big.db")


def _deleted_behind_its_back(where: Path, base: Path) -> None:
    """Vectors deleted by a writer that does not erase them from the index (an older
    recuerdo): the store's deletion mark moves on, the header's does not."""
    from recuerdo.store.sqlite import SQLiteStore

    store = SQLiteStore(str(base / ".recuerdo" / "state" / "big.db"))
    with store.write() as tx:
        tx.execute("DELETE FROM items WHERE content = ?", (text(7),))
        vectors.collect_orphans(tx)
    store.close()


@pytest.mark.parametrize(
    "damage",
    [
        _truncate,
        _flip_a_byte,
        _garbage_header,
        _sample_changed,
        _another_store_same_name,
        _deleted_behind_its_back,
    ],
)
def test_an_index_that_does_not_describe_its_store_is_rebuilt(built: Path, damage) -> None:  # type: ignore[no-untyped-def]
    damage(folder(built), built)
    before = vectors.STATS.copy()
    with open_memory(built) as memory:
        for query in (text(3), text(1030), text(7)):
            assert search(memory, query) == exact(memory, query)
        saved(memory)
    assert vectors.STATS["built"] - before["built"] == 1
    assert vectors.STATS["opened"] == before["opened"]
    with open_memory(built) as memory:  # the rebuilt index was saved, and is used
        assert search(memory, text(8)) == exact(memory, text(8))
    assert vectors.STATS["built"] - before["built"] == 1


def test_a_store_restored_from_an_older_copy_does_not_use_the_newer_index(built: Path) -> None:
    state = built / ".recuerdo" / "state"
    with open_memory(built) as memory:
        memory.backup(state.parent / "copy.db", raw=True)
        memory.forget(fill(memory, range(60, 61))[0])  # a deletion after the copy
        fill(memory, range(61, 70))
        memory._upkeep.drain()
        assert search(memory, text(64)) == exact(memory, text(64))
        memory._meaning.vectors(HashEmbedder()).write_generation()
    for suffix in ("-wal", "-shm"):
        (state / f"big.db{suffix}").unlink(missing_ok=True)
    shutil.copy(state.parent / "copy.db", state / "big.db")
    before = vectors.STATS.copy()
    with open_memory(built) as memory:
        for query in (text(2), text(64)):  # 64 was stored after the copy: it is not here
            assert search(memory, query) == exact(memory, query)
    assert vectors.STATS["built"] - before["built"] == 1


@pytest.mark.parametrize("stop_at", ["data", "header"])
def test_a_crash_while_saving_leaves_the_previous_generation_in_use(
    built: Path, stop_at: str
) -> None:
    """A process dies while writing a generation: before its data file is renamed, or after
    it but before the header is."""
    where = folder(built)
    old = header(where)
    target = ".hnsw" if stop_at == "data" else ".json"
    script = f"""
import os
import recuerdo
from recuerdo.index import vectors
from tests.test_vector_index_file import HashEmbedder, text
vectors.EXACT_LIMIT = {LIMIT}
real = os.replace
def dying(source, target, *args, **kwargs):
    if str(target).endswith({target!r}):
        os._exit(9)
    return real(source, target, *args, **kwargs)
memory = recuerdo.open("big", base_dir={str(built)!r}, embedder=HashEmbedder())
memory.remember_many([{{"category": "learning", "content": text(n)}} for n in range(60, 66)])
memory._upkeep.drain()
memory.search("anything", stages=["meaning"])
os.replace = dying
memory._meaning.vectors(HashEmbedder()).write_generation()
"""
    done = subprocess.run(
        python_command(script), cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 9, done.stderr[-2000:]
    assert header(where) == old
    before = vectors.STATS.copy()
    with open_memory(built) as memory:
        for query in (text(63), text(4)):
            assert search(memory, query) == exact(memory, query)
    assert vectors.STATS["built"] == before["built"]
    assert vectors.STATS["opened"] - before["opened"] == 1


def _index_bytes(where: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(where.rglob("*")) if path.is_file())


def as_indexed(where: Path, embedding_id: int) -> bytes:
    """The bytes the saved index holds for a vector."""
    index = vector_file.usearch_index().restore(str(data_file(where)), view=True)
    found = index.get(np.asarray([embedding_id], dtype=np.uint64), dtype=np.int8)
    return bytes(np.asarray(found[0]).tobytes())


@pytest.mark.parametrize("how", ["forget_knowledge", "forget_entry", "hard_delete"])
def test_forgotten_vectors_leave_every_index_file(built: Path, how: str) -> None:
    marker = "Qwyxzzel vector marker"
    where = folder(built)
    with open_memory(built) as memory:
        if how == "forget_knowledge":
            reply = memory.remember_knowledge(marker, source="secrets")
        elif how == "forget_entry":
            entry = memory.remember("learning", marker)
        else:
            note = memory.save("Secret", marker)
        memory._upkeep.drain()
        with memory._store.read() as tx:
            row = tx.one(
                "SELECT e.id, e.vector FROM embeddings e JOIN chunks c ON c.hash = e.hash"
                " JOIN items i ON i.id = c.item_id WHERE i.content LIKE ?",
                (f"%{marker}%",),
            )
        assert row is not None
        vector = memory._meaning.vectors(HashEmbedder())
        search(memory, marker)
        assert vector.write_generation()  # the marker's vector is in the saved index now
        indexed = as_indexed(where, row["id"])
        stored = bytes(row["vector"])[4:]
        assert indexed in _index_bytes(where) and stored != indexed
        before = vectors.STATS.copy()
        if how == "forget_knowledge":
            memory.forget_knowledge(passage=reply["doc_id"])  # collects the vector at once
        elif how == "forget_entry":
            assert memory.forget(entry)
            memory._upkeep.drain()  # the vector goes when its orphan is collected
        else:
            memory.delete(note["id"], hard=True)
            memory._upkeep.drain()
        raw = _index_bytes(where)
        assert indexed not in raw and stored not in raw
        if how == "forget_knowledge":  # collected inside the forget: the store's files too
            raw = _index_bytes(where.parent)
            assert indexed not in raw and stored not in raw
        assert vectors.STATS["erase_rewritten"] - before["erase_rewritten"] == 1
        assert search(memory, marker) == exact(memory, marker)
    with open_memory(built) as memory:  # the rewritten index is trusted, and lacks it
        assert search(memory, marker) == exact(memory, marker)
    assert vectors.STATS["built"] == before["built"]
    assert vectors.STATS["discarded"] == before["discarded"]


def test_a_memory_in_ram_forgets_from_its_index_without_rebuilding() -> None:
    before = vectors.STATS.copy()
    with recuerdo.open("ram", in_memory=True, embedder=HashEmbedder()) as memory:
        ids = fill(memory, range(40))
        assert search(memory, text(12), k=1) == [ids[12]]
        assert memory.forget(ids[12])
        memory._upkeep.drain()
        assert search(memory, text(12)) == exact(memory, text(12))
        assert ids[12] not in search(memory, text(12), k=40)
    assert vectors.STATS["built"] - before["built"] == 1


def test_where_indexes_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(vector_file.CACHE_ENV, str(tmp_path / "cache"))
    assert vector_file.index_home(":memory:") is None
    assert vector_file.index_home("/data/shop.db") == Path("/data/shop.db-vectors")
    first = vector_file.index_home("postgresql://me@db/recuerdo#shop")
    second = vector_file.index_home("postgresql://me@db/recuerdo#shop2")
    assert first is not None and second is not None and first != second
    assert first.parent == tmp_path / "cache"


def test_marks_are_ordered_and_two_histories_differ() -> None:
    one, two = vector_file.next_mark(0), vector_file.next_mark(0)
    assert vector_set._compare(one, one) == "same"
    assert vector_set._compare(vector_file.next_mark(one), one) == "newer"
    assert vector_set._compare(one, vector_file.next_mark(one)) == "behind"
    assert one == two or vector_set._compare(one, two) == "foreign"


def test_only_the_current_generation_and_its_header_are_kept(built: Path) -> None:
    where = folder(built)
    names = sorted(path.name for path in where.iterdir())
    assert len([n for n in names if n.endswith(".hnsw")]) == 1
    assert len([n for n in names if n.endswith(".json")]) == 1
    assert not [n for n in names if n.endswith(".tmp")]
    assert all(oct(os.stat(where / n).st_mode & 0o777) == "0o600" for n in names)


def _saved_files(tmp_path: Path, count: int = 50) -> tuple[vector_file.IndexFiles, np.ndarray]:
    """Files of an index of ``count`` vectors under keys 1..count; the bytes it holds."""
    files = vector_file.IndexFiles(tmp_path / "vectors", "m", "/nowhere.db")
    index = vector_file.new_index(DIM)
    keys = np.arange(1, count + 1, dtype=np.int64)
    raw = np.random.default_rng(4).normal(size=(count, DIM)).astype(np.float32)
    matrix = np.clip(np.rint(raw / np.abs(raw).max(axis=1, keepdims=True) * 127), -127, 127)
    vector_file.add_vectors(index, keys, matrix.astype(np.int8))
    held = np.vstack(index.get(keys.astype(np.uint64), dtype=np.int8)).view(np.uint8)
    with files.locked():
        files.save(index, covered=count, deletions=5, samples=[(count, "x" * 32)], previous=None)
    return files, held


def test_a_vector_is_found_and_overwritten_in_a_saved_file(tmp_path: Path) -> None:
    files, held = _saved_files(tmp_path)
    found = files.header()
    assert found is not None
    path = files.data_path(found.generation)
    assert vector_file.holds(path, held[:1]) and vector_file.holds(path, held[40:41])
    assert vector_file.scrub(path, held[:1]) == 1
    assert not vector_file.holds(path, held[:1])
    assert vector_file.holds(path, held[40:41])  # the others stay
    assert files.open(found) is None  # changed since its CRC was taken: not trusted


@pytest.mark.parametrize(
    ("before", "after", "outcome"),
    [(5, 9, "rewritten"), (4, 9, "discarded"), (3, 5, "current")],
)
def test_erasing_from_files(tmp_path: Path, before: int, after: int, outcome: str) -> None:
    """Rewritten without the vectors when the files reflect the store up to this deletion;
    deleted when they miss an earlier one; untouched when they already reflect it."""
    files, held = _saved_files(tmp_path)
    old = files.header()
    assert old is not None

    def sample(ids: Sequence[int]) -> list[tuple[int, str]]:
        return [(i, "y" * 32) for i in ids]

    assert vector_file.erase(files, [3, 7, 49, 999], before, after, 48, sample) == outcome
    raw = b"".join(p.read_bytes() for p in files.folder.glob("*.hnsw*"))
    now = files.header()
    if outcome == "rewritten":
        assert now is not None and now.generation > old.generation
        assert (now.count, now.covered, now.deletions) == (47, 48, after)
        assert all(bytes(held[k - 1]) not in raw for k in (3, 7, 49))
        assert bytes(held[10]) in raw
        assert files.open(now) is not None
    elif outcome == "discarded":
        assert now is None and raw == b""
    else:
        assert now == old


def test_a_memory_erases_only_its_own_vectors_inside_another_memorys_write(
    built: Path, tmp_path: Path
) -> None:
    """A forget of one memory collected while another memory's write is open: its vector
    leaves its own index file, and the other memory's files are left as they are."""
    other_base = tmp_path / "other"
    with open_memory(built) as mine, open_memory(other_base) as other:
        fill(other, range(200, 260))
        search(other, text(201))
        saved(other)  # built here, then saved in the background
        theirs = _index_bytes(folder(other))
        victim = fill(mine, range(60, 61))[0]
        with mine._store.read() as tx:
            row = tx.one("SELECT max(id) AS id FROM embeddings")
        assert row is not None
        search(mine, text(60))
        assert mine._meaning.vectors(HashEmbedder()).write_generation()
        indexed = as_indexed(folder(mine), int(row["id"]))
        with other._write(0):
            assert mine.forget(victim)
            mine._upkeep.drain()
        assert indexed not in _index_bytes(folder(mine))
        assert _index_bytes(folder(other)) == theirs
        assert search(mine, text(60)) == exact(mine, text(60))
