"""How the code store spells paths and what a commit says (decision 0095), over the file store,
the in-memory store and PostgreSQL:

* two paths that differ only in bytes that are not UTF-8 stay two files (they were decoded with
  replacement into one path, and one file was lost);
* a credential in a commit message, an author's name or email, or a path goes through the
  secret guard like the files' contents (it was stored and served verbatim).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import recuerdo
from recuerdo.code.paths import raw, spell

from .gitrepo import Repo

KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS = "AKIAIOSFODNN7EXAMPLQ"


pytestmark = pytest.mark.usefixtures("no_model")  # the code store's own search, no vectors


def _write(repo: Repo, name: bytes, content: bytes) -> None:
    (repo.path / os.fsdecode(name)).write_bytes(content)


def _code_rows(mem: recuerdo.Memory) -> str:
    """Every row of the code store's tables and of the code items, as text."""
    with mem._store.read() as tx:
        rows: list[Any] = []
        for table in ("code_repos", "code_commits", "code_changes", "code_tree"):
            rows += tx.all(f"SELECT * FROM {table} WHERE tenant = ?", (mem.tenant,))
        rows += tx.all(
            "SELECT title, key, content, meta FROM items WHERE tenant = ? AND item_type = 'code'",
            (mem.tenant,),
        )
    return repr([dict(row) for row in rows])


# -- paths that are not UTF-8 ---------------------------------------------------------------

NAMES = [
    b"a\xff.txt",
    b"a\xfe.txt",
    b"a\xef\xbf\xbd.txt",  # U+FFFD itself, what both used to become
    b"b\\x41.txt",  # a backslash, x and two hex digits, spelled like an escape
    b"bA.txt",  # what that escape would read as
    b"c\\x5c.txt",
    b"d\\.txt",
    "caf\u00e9.txt".encode(),
    b"caf\xe9.txt",  # the same name in Latin-1
    b"e\xed\xa0\x80.txt",  # a surrogate encoded as UTF-8: not UTF-8
]


def test_the_spelling_is_one_to_one_and_gives_the_bytes_back() -> None:
    spelled = [spell(name) for name in NAMES]
    assert len(set(spelled)) == len(NAMES)
    assert [raw(text) for text in spelled] == NAMES
    assert spelled[0] == "a\\xff.txt" and spelled[3] == "b\\x5cx41.txt" and spelled[6] == "d\\.txt"
    for text in spelled:
        text.encode("utf-8")  # storable as text anywhere: no lone surrogate, no NUL
        assert "\0" not in text


def test_paths_that_differ_in_bytes_that_are_not_utf8_stay_two_files(
    memory: recuerdo.Memory, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "r")
    for number, name in enumerate(NAMES):
        _write(repo, name, f"file {number}\n".encode())
    repo.commit("names of every kind")
    reply = memory.code_ingest_path(repo.path, "r")
    assert reply["blobs_added"] == len(NAMES)
    assert memory.code_status("r")["file_entries"] == len(NAMES)
    for number, name in enumerate(NAMES):
        assert memory.code_at("r", spell(name))["content"] == f"file {number}\n"
        assert [h["did"] for h in memory.code_history("r", spell(name))["history"]] == ["added"]
    assert memory.code_at("r", "a\\xFF.txt")["content"] == "file 0\n"  # either case of hex
    # Deleting one of them deletes that one only.
    os.remove(repo.path / os.fsdecode(NAMES[0]))
    repo.commit("drop one")
    memory.code_ingest_path(repo.path, "r")
    assert memory.code_at("r", "a\\xff.txt")["kind"] == "deleted"
    assert memory.code_at("r", "a\\xfe.txt")["content"] == "file 1\n"
    assert memory.code_status("r")["file_entries"] == len(NAMES) - 1
    changed = memory.code_changes_since("r", "HEAD~1")["commits"][0]["files"]
    assert [(f["path"], f["status"]) for f in changed] == [("a\\xff.txt", "deleted")]


# -- credentials in what a commit says ------------------------------------------------------


@pytest.fixture
def leaky(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "leaky")
    repo.write(f"keys/{KEY}.txt", "hi\n")
    repo.write(f"{AWS}.cfg", "region = eu\n")
    repo.git("add", "-A")
    repo.git(
        "commit",
        "-q",
        "-m",
        f"rotate CI token, old one was {KEY}",
        f"--author=Ops {KEY} <{AWS}@x.org>",
    )
    return repo


def test_a_credential_in_a_message_author_or_path_is_redacted(
    memory: recuerdo.Memory, leaky: Repo
) -> None:
    memory.code_ingest_path(leaky.path, "r")
    memory._upkeep.drain()
    stored = _code_rows(memory)
    assert KEY not in stored and AWS not in stored
    assert "secret(API)" in stored
    history = memory.code_history("r", "keys/secret(API).txt")["history"]
    assert history[0]["subject"] == "rotate CI token, old one was secret(API)"
    assert history[0]["author"] == "Ops secret(API)"
    # The original spelling is redacted alike: it reaches the file too.
    assert memory.code_at("r", f"keys/{KEY}.txt")["content"] == "hi\n"
    assert memory.code_at("r", f"{AWS}.cfg")["path"] == "secret(API).cfg"
    commit = memory.code_changes_since("r", "HEAD~0")
    assert KEY not in repr(commit)
    hits = memory.search("region", types=["code"])["results"]
    assert [hit["title"] for hit in hits] == ["secret(API).cfg"]


def test_no_byte_of_the_credential_reaches_the_files(base: Path, leaky: Repo) -> None:
    memory = recuerdo.open("code", base_dir=base)
    try:
        memory.code_ingest_path(leaky.path, "r")
        memory._upkeep.drain()
        memory._store.reclaim()
    finally:
        memory.close()
    stored = b"".join(p.read_bytes() for p in base.rglob("*") if p.is_file())
    assert b"region = eu" in stored  # the check can see what was kept
    assert KEY.encode() not in stored and AWS.encode() not in stored


def test_files_under_a_name_holding_a_credential_stay_apart(
    memory: recuerdo.Memory, tmp_path: Path
) -> None:
    """The guard read a path whole, and a credential's rule takes the rest of its text:
    ``fixtures/password=.../a.txt`` and ``.../b.txt`` became one path (the review of 0095)."""
    repo = Repo(tmp_path / "r")
    repo.write("fixtures/password=hunter2xyz/a.txt", "alpha file\n")
    repo.write("fixtures/password=hunter2xyz/b.txt", "beta file\n")
    repo.commit("fixtures")
    memory.code_ingest_path(repo.path, "r")
    assert memory.code_status("r")["file_entries"] == 2
    for name, content in (("a", "alpha file\n"), ("b", "beta file\n")):
        found = memory.code_at("r", f"fixtures/password=hunter2xyz/{name}.txt")
        assert found["content"] == content and "hunter2xyz" not in found["path"]
        assert found["path"].endswith(f"/{name}.txt")
