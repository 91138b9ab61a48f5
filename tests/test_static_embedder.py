"""The static embedder: a table distilled from the shipped MiniLM, shipped in the package and
unpacked once into the cache.

The distillation (concurrent first use, making the table again over a damaged cache file and
a damaged shipped one) is tested on the real model with a cut vocabulary: the tokenizer's
first 3,072 tokens, a tenth of the full pass. The full table (30,522 tokens) is the one every
other test reads: it lives in the machine's cache folder (``cache_dir()``), shared with the
rest of the suite, unpacked there from the package at its first use.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import recuerdo
from recuerdo.index.embed import load_embedder, minilm_files
from recuerdo.index.static import (
    _SPARE_ROWS,
    CACHE_ENV,
    DIM,
    StaticMiniLM,
    _file_digest,
    _from_int8,
    _read,
    _to_int8,
    _unpack,
    _Words,
    _write,
    cache_dir,
    load_table,
    ship,
    shipped_path,
    source_key,
)

from .conftest import run_python

SMALL_VOCABULARY = 1024
FIRST_USE = (
    "import json, sys; from pathlib import Path; "
    "from recuerdo.index.embed import minilm_files; "
    "from recuerdo.index.static import load_table; "
    "key, table, origin = load_table(minilm_files()[0], Path(sys.argv[1]), Path(sys.argv[2]), "
    "Path(sys.argv[3])); "
    "print(json.dumps({'origin': origin, 'key': key, 'rows': table.vocabulary}))"
)


@pytest.fixture(scope="session")
def small_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM's tokenizer with its vocabulary cut to the first ``SMALL_VOCABULARY`` ids (the
    special and unused tokens, then the first single characters): the same model and the same
    steps, a thirtieth of the rows to distil (at 3,072 ids the two distillations here took
    7.5 s of the suite's time)."""
    whole = json.loads(minilm_files()[1].read_text())
    vocab = whole["model"]["vocab"]
    whole["model"]["vocab"] = {t: i for t, i in vocab.items() if i < SMALL_VOCABULARY}
    path = tmp_path_factory.mktemp("small-tokenizer") / "tokenizer.json"
    path.write_text(json.dumps(whole))
    return path


@pytest.fixture(scope="session")
def first_use(
    tmp_path_factory: pytest.TempPathFactory, small_tokenizer: Path
) -> tuple[Path, list[dict[str, object]]]:
    """Two processes load a table at once, over a cache folder whose table file is garbage and
    a package whose shipped table is garbage too."""
    folder = tmp_path_factory.mktemp("static-cache")
    shipped = tmp_path_factory.mktemp("static-shipped")
    key = source_key(minilm_files()[0], small_tokenizer)
    (folder / f"static-minilm-{key[:16]}.npz").write_bytes(b"PK\x03\x04 not a table")
    shipped_path(key, shipped).write_bytes(b"PK\x03\x04 not a shipped table")
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", FIRST_USE, str(small_tokenizer), str(folder), str(shipped)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    replies = []
    for run in runs:
        out, _ = run.communicate(timeout=1800)
        assert run.returncode == 0
        replies.append(json.loads(out.strip().splitlines()[-1]))
    return folder, replies


@pytest.fixture(scope="session")
def embedder() -> StaticMiniLM:
    """The full table, from the machine's cache (built there first if this is the first use)."""
    return StaticMiniLM(cache_dir())


@pytest.fixture(scope="session")
def cache(embedder: StaticMiniLM) -> Path:
    return cache_dir()


def cached_file(folder: Path, key: str | None = None) -> Path:
    """The cache file of the installed model's table (or of ``key``'s) in ``folder``."""
    key = key or source_key(*minilm_files())
    return folder / f"static-minilm-{key[:16]}.npz"


def test_two_first_uses_over_a_damaged_cache_build_once_and_leave_one_good_table(
    first_use: tuple[Path, list[dict[str, object]]], small_tokenizer: Path
) -> None:
    """Two processes starting together over a damaged table (and a damaged shipped one): one
    distils it while the other waits and reads the new table; the folder holds one whole table
    file and nothing half-written."""
    folder, replies = first_use
    assert sorted(str(r["origin"]) for r in replies) == ["cache", "model"]
    key = source_key(minilm_files()[0], small_tokenizer)
    assert [r["key"] for r in replies] == [key, key]
    assert [r["rows"] for r in replies] == [SMALL_VOCABULARY, SMALL_VOCABULARY]
    leftovers = [p.name for p in folder.iterdir() if not p.name.endswith((".npz", ".lock"))]
    assert leftovers == []
    [path] = folder.glob("*.npz")
    table = _read(path, key)
    assert table is not None and table.vocabulary == SMALL_VOCABULARY
    words = _Words(table)
    assert words.matrix.shape == (SMALL_VOCABULARY + _SPARE_ROWS, DIM)
    assert not words.matrix.any()  # rows are read when needed; compound rows start empty


def test_a_second_load_reads_the_cache(embedder: StaticMiniLM, cache: Path) -> None:
    """Loading again builds nothing and gives the cached full table, under the same name."""
    again = StaticMiniLM(cache)
    assert again.origin == "cache" and again.name == embedder.name
    table = _read(cached_file(cache), source_key(*minilm_files()))
    assert table is not None and table.vocabulary == 30522
    assert again.name.startswith("static-minilm-")


def test_the_name_follows_the_model_files_and_recipe(embedder: StaticMiniLM) -> None:
    """The name is the key of what the table is made from (model, tokenizer, recipe)."""
    assert embedder.name == f"static-minilm-{source_key(*minilm_files())[:12]}"


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _stale(path: Path) -> None:
    """A whole, consistent file made from other inputs (another model or recipe)."""
    table = _read(path, source_key(*minilm_files()))
    assert table is not None
    _write(path, "0" * 64, table.whole())


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _missing(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("damage", [_flip, _truncate, _stale, _empty, _missing])
def test_a_damaged_or_stale_cache_is_refused(cache: Path, tmp_path: Path, damage: object) -> None:
    """A cache file that is garbled, cut short, empty, missing or made from other inputs is
    not used (and so is built again, as the first use above shows)."""
    copy = tmp_path / cached_file(cache).name
    shutil.copy(cached_file(cache), copy)
    key = source_key(*minilm_files())
    assert _read(copy, key) is not None
    damage(copy)  # type: ignore[operator]
    assert _read(copy, key) is None


def test_a_file_changed_in_place_gets_its_new_digest(tmp_path: Path) -> None:
    """Digests are kept per process for a file's size and time of change: a model file
    rewritten in place (same path, same size) is hashed again, so its table is keyed anew."""
    model = tmp_path / "model.onnx"
    model.write_bytes(b"a" * 1000)
    first = _file_digest(model)
    assert _file_digest(model) == first
    model.write_bytes(b"b" * 1000)
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 1_000_000))
    assert _file_digest(model) != first


UNPACK = """
import json, sys
from recuerdo.index.static import StaticMiniLM
embedder = StaticMiniLM()
print(json.dumps({"origin": embedder.origin, "name": embedder.name,
                  "model runtime": "onnxruntime" in sys.modules}))
"""


def _shipped_rows(path: Path) -> np.ndarray:
    """A shipped file's rows as floats, read here with numpy alone."""
    with np.load(path) as shipped:
        rows: np.ndarray = shipped["rows"].astype(np.float32) * shipped["scales"][:, None]
        return rows


def test_the_package_ships_the_table_of_the_installed_model() -> None:
    """The shipped table is keyed to the model and tokenizer files installed here and the
    recipe: after the model's package changes, ``python -m recuerdo.index.static --ship``
    must write it again (until then first uses distil, as the damaged cases below do)."""
    key = source_key(*minilm_files())
    shipped = _unpack(shipped_path(key), key)
    assert shipped is not None and shipped.shape == (30522, DIM)


def test_a_first_use_unpacks_the_shipped_table_without_the_model(
    embedder: StaticMiniLM, tmp_path: Path
) -> None:
    """Over an empty cache the table comes from the package in a fraction of a second: the
    model's runtime is never loaded (distilling took half a minute of CPU on this machine's
    first use, and every fresh machine's). The cache then holds the shipped rows."""
    folder = tmp_path / "cache"
    reply = _run_script(UNPACK, folder)
    assert reply == {"origin": "package", "name": embedder.name, "model runtime": False}
    key = source_key(*minilm_files())
    table = _read(cached_file(folder), key)
    assert table is not None
    assert np.array_equal(table.whole(), _shipped_rows(shipped_path(key)))


def _shipped_copy(tmp_path: Path) -> tuple[Path, str]:
    key = source_key(*minilm_files())
    copy = tmp_path / shipped_path(key).name
    shutil.copy(shipped_path(key), copy)
    return copy, key


def _resaved(path: Path, key: str, change_a_row: bool) -> None:
    """The file saved again whole (a valid archive) with ``key``, one row changed or not, and
    the digest it had."""
    with np.load(path) as old:
        members = {name: old[name].copy() for name in old.files}
    if change_a_row:
        members["rows"][1000] = -members["rows"][1000]
    members["key"] = np.frombuffer(key.encode(), dtype=np.uint8)
    np.savez_compressed(path, **members)


@pytest.mark.parametrize(
    "damage",
    [
        _flip,
        _truncate,
        _empty,
        _missing,
        pytest.param(lambda path: _resaved(path, "0" * 64, False), id="other-model"),
        pytest.param(
            lambda path: _resaved(path, source_key(*minilm_files()), True), id="digest-mismatch"
        ),
    ],
)
def test_a_damaged_or_foreign_shipped_table_is_not_unpacked(tmp_path: Path, damage: object) -> None:
    """A shipped file that is garbled, cut short, empty, missing, made from another model or
    whose rows no longer match its digest gives no table (the first use then distils, as the
    concurrent first use above shows)."""
    copy, key = _shipped_copy(tmp_path)
    assert _unpack(copy, key) is not None
    damage(copy)  # type: ignore[operator]
    assert _unpack(copy, key) is None


def test_a_shipped_table_is_the_table_distilled_here(
    first_use: tuple[Path, list[dict[str, object]]],
    small_tokenizer: Path,
    tmp_path: Path,
) -> None:
    """``--ship`` writes what a first use would distil on this machine, row for row: the cut
    vocabulary's table shipped, then unpacked into an empty cache, equals the one the
    concurrent first use distilled."""
    folder, _ = first_use
    model = minilm_files()[0]
    key = source_key(model, small_tokenizer)
    distilled = _read(cached_file(folder, key), key)
    assert distilled is not None
    written = ship(tmp_path / "tables", (model, small_tokenizer))
    assert written == shipped_path(key, tmp_path / "tables")
    _, unpacked, origin = load_table(model, small_tokenizer, tmp_path / "cache", written.parent)
    assert origin == "package"
    assert np.array_equal(unpacked.whole(), distilled.whole())


@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 4), st.integers(1, 24)),
        elements=st.integers(-100_000, 100_000).map(lambda milli: milli / 1000),
    )
)
def test_int8_rows_stay_within_half_a_step(table: np.ndarray) -> None:
    """Each row is rounded on its own scale: no value moves by more than half a step (its
    row's largest magnitude over 254), the largest keeps its value, and a zero row (a special
    token's) stays zero."""
    table = np.vstack([table, np.zeros((1, table.shape[1]), dtype=np.float32)])
    rows, scales = _to_int8(table)
    again = _from_int8(rows, scales)
    assert rows.dtype == np.int8 and again.dtype == np.float32
    step = np.abs(table).max(axis=1) / 127
    assert np.all(np.abs(again - table) <= step[:, None] * (0.5 + 1e-5))
    assert np.all(np.abs(rows).max(axis=1)[step > 0] == 127)
    assert not again[step == 0].any()


LOAD_PEAK = (
    "import json, tokenizers, numpy; from recuerdo.index import static; "
    "peak = lambda: int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
    ".split()[1]) * 1024; before = peak(); e = static.StaticMiniLM(); "
    "e.embed(['Caroline went to an LGBTQ support group yesterday.', "
    "'Melanie finished a painting of a sunset over the lake.']); "
    "print(json.dumps({'grew': peak() - before, 'table': e._words.vocabulary * static.DIM * 4}))"
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_loading_the_table_keeps_only_the_rows_in_use(cache: Path) -> None:
    """A server's peak memory: loading checks the 31 MB table without holding it, and the
    rows of the words embedded are read when first needed; the rest never takes memory (the
    tokenizer, read beside it, is about a third of the table)."""
    env = {**os.environ, CACHE_ENV: str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", LOAD_PEAK], env=env, capture_output=True, text=True, check=True
    ).stdout
    reply = json.loads(out.strip().splitlines()[-1])
    assert reply["grew"] < 0.6 * reply["table"], reply


def test_rows_read_when_needed_give_the_vectors_of_the_whole_table(cache: Path) -> None:
    """Only the tokens of the words met are read, and the vectors are those of the whole
    table, to the bit."""
    lazy = StaticMiniLM(cache)
    assert not lazy._words.loaded.any()
    vectors = lazy.embed(TEXTS)
    tokens = {
        token
        for text in TEXTS
        for word in text.split()
        for token in lazy._tokenizer.encode(word, add_special_tokens=False).ids
    }
    assert set(np.flatnonzero(lazy._words.loaded).tolist()) == tokens
    whole = StaticMiniLM(cache)
    whole._words.load(range(whole._words.vocabulary))
    assert whole._words.loaded.all()
    assert np.array_equal(vectors, whole.embed(TEXTS))
    assert np.array_equal(vectors, lazy.embed(TEXTS))


TEXTS = [
    "Caroline went to an LGBTQ support group yesterday.",
    "Melanie finished a painting of a sunset over the lake.",
    "The quarterly invoices are due at the end of March.",
]


def test_vectors_are_unit_length_and_deterministic(embedder: StaticMiniLM, cache: Path) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors, embedder.embed(TEXTS))
    assert np.array_equal(vectors, StaticMiniLM(cache).embed(TEXTS))
    one_by_one = np.vstack([embedder.embed([text]) for text in TEXTS])
    assert np.array_equal(vectors, one_by_one)


@pytest.mark.parametrize(
    ("anchor", "similar", "unrelated"),
    [
        ("The cat sat on the mat", "A kitten was sitting on the rug", "Stock markets fell sharply"),
        ("She paints landscapes", "Her watercolour of the mountains", "The invoice is overdue"),
        ("Prefers answers in Spanish", "Spanish replies please", "The database index is slow"),
    ],
)
def test_similar_texts_score_above_unrelated_ones(
    embedder: StaticMiniLM, anchor: str, similar: str, unrelated: str
) -> None:
    a, s, u = embedder.embed([anchor, similar, unrelated])
    assert float(a @ s) > float(a @ u) + 0.1
    assert float(a @ s) >= embedder.min_similarity > float(a @ u)


def test_a_query_gets_its_passage_first(embedder: StaticMiniLM) -> None:
    """The table is symmetric: a query's vector is its passage vector, and a question finds
    the passage that answers it among others."""
    question = "When did Caroline go to the support group?"
    assert np.array_equal(
        embedder.embed([question], query=True), embedder.embed([question], query=False)
    )
    passages = embedder.embed(TEXTS)
    [query] = embedder.embed([question], query=True)
    assert int(np.argmax(passages @ query)) == 0


@pytest.mark.parametrize("text", ["", "   \n\t ", "[CLS] [SEP] [PAD]"])
def test_a_text_with_nothing_to_embed_is_the_zero_vector(embedder: StaticMiniLM, text: str) -> None:
    """No weighed word, no direction: the zero vector, near nothing (cosine 0)."""
    [vector] = embedder.embed([text])
    assert not vector.any()


def test_no_texts_no_rows(embedder: StaticMiniLM) -> None:
    assert embedder.embed([]).shape == (0, DIM)


def test_a_very_long_text_is_embedded_by_its_first_words(embedder: StaticMiniLM) -> None:
    """A text of 50,000 words gets a unit vector: that of its first 20,000 words (a bound on
    one text's cost)."""
    head = " ".join(["Caroline paints the lake at sunset."] * 4000)  # 24,000 words
    first = " ".join(head.split()[:20_000])
    [vector] = embedder.embed([head + " invoices overdue database" * 9000])
    assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    assert np.allclose(vector, embedder.embed([first])[0], atol=1e-6)


def test_unknown_words_and_other_scripts_are_embedded(embedder: StaticMiniLM) -> None:
    """Words never seen before (accents, other scripts, symbols) go through the tokenizer."""
    vectors = embedder.embed(["Café crème über naïve façade", "東京 タワー", "x9q7z-unseen-42"])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_search_finds_by_meaning_through_open(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``recuerdo.open(..., embedder="static")``, a search with no word in common
    with a note finds it by meaning, and an unrelated query finds nothing by meaning."""
    monkeypatch.setenv(CACHE_ENV, str(cache))
    with recuerdo.open("static", base_dir=tmp_path, embedder="static") as memory:
        memory.save("Pets", "Our kitten naps on the rug all afternoon.")
        memory.save("Finance", "The quarterly invoice is due next Friday.")
        memory.save("Travel", "Flights to Lisbon are booked for June.")
        memory._upkeep.drain()
        reply = memory.search("cat sleeping on the carpet", stages=["meaning"])
        assert reply["meaning"] == "armed"
        assert [hit["title"] for hit in reply["results"]][:1] == ["Pets"]
        unrelated = memory.search("chess openings for beginners", stages=["meaning"])
        assert unrelated["results"] == []
        assert memory.index_status()["model"] == load_embedder("static").name  # type: ignore[union-attr]


EXIT_SEARCH = """
import atexit, json, sys
def last_search():
    reply = memory.search("quokka zeppelin fjord", stages=["meaning"])
    print(json.dumps([hit["title"] for hit in reply["results"]]))
atexit.register(last_search)  # before the table is opened, as the upkeep's own handler is
import recuerdo
memory = recuerdo.open("notes", base_dir=sys.argv[1], embedder="static")
memory.save("Harbour", "the harbour crane lifts containers at dawn")
memory.search("harbour crane")  # the table is open now
memory.save("Animals", "a quokka rode a zeppelin over the fjord")
"""


def test_the_table_still_reads_while_the_interpreter_exits(cache: Path, tmp_path: Path) -> None:
    """Exit functions run newest first, so the ones registered before the table was opened
    (the upkeep's, which waits for a worker that may be embedding; a program's own) run after
    whatever the table registered. Its file used to be closed by then: the worker died with
    "Bad file descriptor" when a script ended without closing its memory, and a search in
    such a handler failed. A real interpreter: the forked ones have the table open before the
    script's first line."""
    assert _run_script(EXIT_SEARCH, cache, str(tmp_path)) == ["Animals"]


def _run_script(code: str, cache: Path, *args: str) -> object:
    """What ``code`` printed (JSON) in a new interpreter that read the table from ``cache``,
    once it ended cleanly with nothing on stderr."""
    done = run_python(code, *args, env={CACHE_ENV: str(cache)}, forked=False)
    assert (done.returncode, done.stderr) == (0, "")
    return json.loads(done.stdout)


FORKED_WORDS = """
import json, os
import numpy as np
from recuerdo.index.static import StaticMiniLM
embedder = StaticMiniLM()
embedder.embed(["harbour"])
ready_read, ready_write = os.pipe()
child = os.fork()
if child == 0:
    os.read(ready_read, 1)
    embedder.embed(["xylophonequartzfjord"])  # a word of several tokens: a row of its own
    os._exit(0)
before = embedder.embed(["quokkazeppelinmarsh"])
os.write(ready_write, b"x")
os.waitpid(child, 0)
after = embedder.embed(["quokkazeppelinmarsh"])
print(json.dumps(bool(np.array_equal(before, after))))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_forked_process_learns_words_apart(cache: Path) -> None:
    """A process that forks once its embedder is loaded (a preforking server,
    ``multiprocessing`` with fork) gives each process its own word rows. They were mapped
    shared: a word the child learned took the row of the one its parent had just learned, and
    the parent's vector for that word changed under it."""
    assert _run_script(FORKED_WORDS, cache) is True


def test_minilm_with_two_workers_gives_the_same_vectors() -> None:
    """MiniLM's background path shares a batch between two threads (both cores): the vectors
    are those of one thread, row for row."""
    from recuerdo.index.embed import MiniLM

    texts = [*TEXTS, "short", "A much longer text about the lake, the sunset and painting. " * 20]
    one, two = MiniLM(workers=1), MiniLM(workers=2)
    assert np.allclose(one.embed(texts), two.embed(texts), atol=1e-5)
    assert np.allclose(two.embed(texts), one.embed(texts, query=True), atol=1e-5)


@pytest.mark.parametrize(
    ("choice", "model"),
    [("static", "static-minilm-"), ("minilm", "all-minilm-l6-v2-int8"), ("auto", "static-minilm-")],
)
def test_index_status_and_search_name_the_embedder_in_use(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: str, model: str
) -> None:
    """Whichever embedder is chosen (``auto``, the default, is the static table; MiniLM stays
    selectable), it finds a paraphrase with no shared word, and ``index_status`` names it."""
    monkeypatch.setenv(CACHE_ENV, str(cache))
    with recuerdo.open("named", base_dir=tmp_path, embedder=choice) as memory:
        memory.save("Invoices", "Billing runs on the first day of every month.")
        memory.save("Car", "My automobile broke down on the highway.")
        memory._upkeep.drain()
        reply = memory.search("vehicle failure during a road trip", stages=["meaning"])
        assert reply["meaning"] == "armed"
        assert [hit["title"] for hit in reply["results"]][:1] == ["Car"]
        status = memory.index_status()
        assert str(status["model"]).startswith(model)
        assert status["embedded_percent"] == 100


def test_without_a_model_index_status_names_none(tmp_path: Path) -> None:
    """With ``none``, no model is named and meaning is not armed."""
    with recuerdo.open("plain", base_dir=tmp_path, embedder="none") as memory:
        memory.save("Car", "My automobile broke down on the highway.")
        memory._upkeep.drain()
        status = memory.index_status()
        assert status["model"] is None and status["meaning"] == "not_armed"


def test_a_full_word_table_starts_again_with_the_rows_already_read(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its word limit the word table starts again: its compound words go, the token rows
    already read stay (nothing is read twice), and the vectors do not change."""
    from recuerdo.index import static

    reference = StaticMiniLM(cache).embed(TEXTS)
    monkeypatch.setattr(static, "_WORD_LIMIT", 12)
    small = StaticMiniLM(cache)
    first = small._words
    small.embed(TEXTS[:1])
    read = first.loaded.copy()
    vectors = small.embed(TEXTS)
    assert small._words is not first  # it started again
    assert np.array_equal(vectors, reference)
    assert small._words.loaded[read].all()
    assert np.array_equal(
        small._words.matrix[: first.vocabulary][read], first.matrix[: first.vocabulary][read]
    )
