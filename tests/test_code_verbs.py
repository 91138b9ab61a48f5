"""The code read verbs: windows, pages, folds, and every refusal leaving the store unchanged."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.errors import RecuerdoError
from recuerdo.store.sqlite import sqlite3

from .conftest import db_dump, settled_dump
from .gitrepo import Repo, sample

pytestmark = pytest.mark.usefixtures("no_model")  # the code store's own search, no vectors


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return sample(tmp_path)


@pytest.fixture
def mem(base: Path, repo: Repo) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("code", base_dir=base)
    memory.code_ingest_path(repo.path, "sample")
    memory._upkeep.drain()
    yield memory
    memory.close()


def _db(mem: recuerdo.Memory) -> str:
    return mem.location


REFUSALS: list[tuple[str, Callable[[recuerdo.Memory], Any], str, int]] = [
    ("unknown repo", lambda m: m.code_status("nope"), "repo_not_ingested", 404),
    ("other branch", lambda m: m.code_status("sample", branch="dev"), "repo_not_ingested", 404),
    ("bad repo name", lambda m: m.code_at("../etc", "x"), "invalid_input", 400),
    (
        "unknown rev",
        lambda m: m.code_at("sample", "b.txt", rev="deadbeef"),
        "revision_not_found",
        404,
    ),
    (
        "before root",
        lambda m: m.code_at("sample", "b.txt", rev="HEAD~9"),
        "revision_not_found",
        404,
    ),
    ("window 0", lambda m: m.code_at("sample", "b.txt", max_bytes=0), "invalid_input", 400),
    ("window big", lambda m: m.code_at("sample", "b.txt", max_bytes=262145), "invalid_input", 400),
    ("line blame", lambda m: m.code_blame("sample", "b.txt", line=2), "line_blame_not_built", 422),
    (
        "binary patch",
        lambda m: m.code_diff("sample", "HEAD~4", patch="img.bin"),
        "diff_binary",
        422,
    ),
    ("limit 0", lambda m: m.code_changes_since("sample", "HEAD~1", limit=0), "invalid_input", 400),
    (
        "limit 501",
        lambda m: m.code_changes_since("sample", "HEAD", limit=501),
        "invalid_input",
        400,
    ),
    ("history 201", lambda m: m.code_history("sample", "b.txt", limit=201), "invalid_input", 400),
    ("diff 2001", lambda m: m.code_diff("sample", "HEAD~1", limit=2001), "invalid_input", 400),
    ("not served", lambda m: m.code_ingest("sample"), "repo_not_served", 404),
]


@pytest.mark.parametrize(
    ("call", "code", "status"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_each_refusal_is_named_and_changes_nothing(
    mem: recuerdo.Memory, call: Callable[[recuerdo.Memory], Any], code: str, status: int
) -> None:
    before = db_dump(_db(mem))
    with pytest.raises(RecuerdoError) as caught:
        call(mem)
    assert caught.value.code == code and caught.value.status == status
    assert db_dump(_db(mem)) == before


def test_a_never_ingested_repo_creates_nothing(base: Path) -> None:
    memory = recuerdo.open("empty", base_dir=base)
    before = settled_dump(memory)
    with pytest.raises(recuerdo.errors.RepoNotIngested):
        memory.code_status("app")
    assert settled_dump(memory) == before
    memory.close()


def test_text_windows_never_split_a_character(base: Path, tmp_path: Path) -> None:
    """Pages of code_at joined back are the file; each page is valid UTF-8."""
    text = "ñandú " * 50 + "\n"
    repo = Repo(tmp_path / "utf")
    repo.commit("utf", {"u.txt": text})
    memory = recuerdo.open("u", base_dir=base)
    memory.code_ingest_path(repo.path, "u")
    pieces, offset = [], 0
    while offset is not None:
        page = memory.code_at("u", "u.txt", offset=offset, max_bytes=7)
        assert page["truncated"] is True and page["read_amplification"] >= 1
        pieces.append(page["content"])
        offset = page["next_offset"]
    assert "".join(pieces) == text
    memory.close()


def test_history_pages_newest_first(mem: recuerdo.Memory, repo: Repo) -> None:
    for k in range(3):
        repo.commit(f"edit {k}", {"b.txt": f"v{k}\n"})
    mem.code_ingest_path(repo.path, "sample")
    first = mem.code_history("sample", "b.txt", limit=2)
    assert [h["subject"] for h in first["history"]] == ["edit 2", "edit 1"]
    rest = mem.code_history("sample", "b.txt", limit=10, before=first["next_before"])
    assert [h["subject"] for h in rest["history"]] == ["edit 0", "Rename a to b, drop old"]
    assert rest["next_before"] is None
    refused = mem.code_history("sample", "config.py")["history"]
    assert refused[0]["refused"] is True and refused[0]["size"] is None
    assert mem.code_history("sample", "never.txt")["state"] == "nothing_stored"


def test_diff_folds_per_path(mem: recuerdo.Memory) -> None:
    got = mem.code_diff("sample", "HEAD~4", patch="b.txt")
    by_path = {p["path"]: p for p in got["paths"]}
    assert by_path["a.txt"]["status"] == "deleted"
    assert by_path["b.txt"]["status"] == "added" and by_path["b.txt"]["renamed_from"] == "a.txt"
    assert by_path["README.md"]["status"] == "modified" and by_path["README.md"]["commits"] == 1
    assert by_path["vendor/lib"]["kind"] == "gitlink"
    assert got["commits"] == 4
    assert got["patch"]["before"] is None
    assert got["patch"]["after"]["content"] == "alpha\nbeta\ngamma\ndelta\n"
    backwards = mem.code_diff("sample", "HEAD", to="HEAD~4")
    assert {p["path"]: p["status"] for p in backwards["paths"]}["a.txt"] == "added"


def test_changes_since_pages_with_next_after(mem: recuerdo.Memory) -> None:
    seen, after = [], None
    while True:
        page = mem.code_changes_since("sample", "HEAD~4", limit=1, after=after)
        seen += [c["subject"] for c in page["commits"]]
        after = page["next_after"]
        if after is None:
            break
    assert seen == ["Rename a to b, drop old", "Edit readme", "Merge side", "Add submodule"]
    only = mem.code_changes_since("sample", "HEAD~4", path_prefix="vendor/")
    assert [c["subject"] for c in only["commits"]] == ["Add submodule"]


def test_long_ranges_are_bounded(base: Path, tmp_path: Path) -> None:
    """More than 2,000 commits: diff refuses, changes_since scans 2,000 and says where to go on."""
    repo = Repo(tmp_path / "long")
    first = repo.commit("start", {"log.txt": "start\n"})
    repo.many(2001)
    memory = recuerdo.open("long", base_dir=base)
    memory.code_ingest_path(repo.path, "long")
    memory._upkeep.drain()
    before = settled_dump(memory)
    with pytest.raises(recuerdo.errors.RangeTooLarge):
        memory.code_diff("long", first)
    assert settled_dump(memory) == before
    page = memory.code_changes_since("long", first, limit=500, path_prefix="nothing/")
    assert page["commits"] == [] and page["scanned"] == 2000 and page["next_after"] == 2001
    assert memory.code_diff("long", "HEAD~2000")["commits"] == 2000
    memory.close()


def test_a_patch_side_over_the_bounds_is_refused(base: Path, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "big")
    repo.commit("small", {"big.txt": "x\n"})
    repo.commit("big", {"big.txt": "y\n" * 5001})
    memory = recuerdo.open("big", base_dir=base)
    memory.code_ingest_path(repo.path, "big")
    with pytest.raises(recuerdo.errors.DiffTooLarge, match="5001 lines"):
        memory.code_diff("big", "HEAD~1", patch="big.txt")
    assert memory.code_diff("big", "HEAD~1")["paths"][0]["size_after"] == 2 * 5001
    memory.close()


def test_a_tampered_blob_is_refused_and_reported(mem: recuerdo.Memory) -> None:
    """Bytes changed behind the store's back: code_at refuses them (500), verify lists them,
    and the other files are still served."""
    readme = mem.code_at("sample", "README.md")
    conn = sqlite3.connect(mem.location)
    row = conn.execute(
        "SELECT compression FROM code_blobs WHERE sha256 = ?", (readme["sha256"],)
    ).fetchone()
    fake = b"# Sample\nsomething else\n"
    conn.execute(
        "UPDATE code_blobs SET content = ? WHERE sha256 = ?",
        (zlib.compress(fake) if row[0] == "zlib" else fake, readme["sha256"]),
    )
    conn.commit()
    conn.close()
    with pytest.raises(recuerdo.errors.BlobCorrupt) as caught:
        mem.code_at("sample", "README.md")
    assert caught.value.status == 500 and "something else" not in caught.value.detail
    with pytest.raises(recuerdo.errors.BlobCorrupt):
        mem.code_diff("sample", "HEAD~2", patch="README.md")
    report = mem.code_verify()
    assert report["ok"] is False
    assert [c["sha256"] for c in report["corrupt"]] == [readme["sha256"]]
    assert report["corrupt"][0]["paths"] == ["sample:README.md"]
    assert mem.code_at("sample", "b.txt")["content"].startswith("alpha")


@pytest.mark.parametrize("prefix", [".github/", "/.github/", "./.github/", "//./.github/"])
def test_a_leading_slash_or_dot_slash_keeps_the_dot_directory(
    memory: recuerdo.Memory, tmp_path: Path, prefix: str
) -> None:
    """Over every store. ``/.github/`` narrowed to ``github/``: the characters ``.`` and ``/``
    were stripped, not the tokens ``./`` and ``/``."""
    repo = Repo(tmp_path / "p")
    repo.commit("one", {"README": "a\n", "github/x.txt": "not the dot-directory\n"})
    repo.commit("add ci", {".github/workflows/ci.yml": "on: push\n"})
    memory.code_ingest_path(repo.path, "r")
    since = memory.code_changes_since("r", "HEAD~1", path_prefix=prefix)
    assert [f["path"] for c in since["commits"] for f in c["files"]] == [".github/workflows/ci.yml"]
    diff = memory.code_diff("r", "HEAD~1", path_prefix=prefix)
    assert [p["path"] for p in diff["paths"]] == [".github/workflows/ci.yml"]
