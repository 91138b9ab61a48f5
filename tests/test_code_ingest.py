"""Ingesting real git repositories: every kind of file, merges, moved refs, incremental runs."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recuerdo

from .gitrepo import CREDENTIAL, Repo, sample

pytestmark = pytest.mark.usefixtures("no_model")  # the code store's own search, no vectors


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return sample(tmp_path)


@pytest.fixture
def mem(base: Path) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("code", base_dir=base)
    yield memory
    memory.close()


def test_first_ingest_reads_the_whole_line(mem: recuerdo.Memory, repo: Repo) -> None:
    """The first-parent line is numbered 1..n; the merged side commit is kept beside it."""
    done = mem.code_ingest_path(repo.path, "sample")
    assert done["state"] == "ingested"
    assert done["new_commits"] == 5 and done["side_commits"] == 1
    assert done["ingested_through"]["commit"] == repo.head()
    assert done["ingested_through"]["ordinal"] == 5
    status = mem.code_status("sample")
    assert status["commits"] == 5 and status["side_commits"] == 1
    assert status["refused_files"] == 3  # config.py, .env, certs/key.pem
    assert status["lag"] is None and status["fresh"] is True


@pytest.mark.parametrize(
    ("path", "kind", "extra"),
    [
        ("README.md", "file", {"content": "# Sample\nThe quick brown fox jumps.\n"}),
        ("b.txt", "file", {"content": "alpha\nbeta\ngamma\ndelta\n"}),
        ("feature.txt", "file", {"content": "feature work\n"}),
        ("a.txt", "deleted", {}),
        ("old.txt", "deleted", {}),
        ("config.py", "refused", {"reason": "credential"}),
        (".env", "refused", {"reason": "name"}),
        ("certs/key.pem", "refused", {"reason": "name"}),
        ("vendor/lib", "gitlink", {"git_blob": "0123456789abcdef0123456789abcdef01234567"}),
    ],
)
def test_each_kind_of_path_at_head(
    mem: recuerdo.Memory, repo: Repo, path: str, kind: str, extra: dict[str, Any]
) -> None:
    """code_at names what a path is at HEAD, and serves only what is kept."""
    mem.code_ingest_path(repo.path, "sample")
    got = mem.code_at("sample", path)
    assert got["state"] == "answered" and got["kind"] == kind
    for key, value in extra.items():
        assert got[key] == value  # type: ignore[literal-required]
    if kind != "file":
        assert "content" not in got and "content_base64" not in got


def test_binary_keeps_hash_and_size_only(mem: recuerdo.Memory, repo: Repo) -> None:
    mem.code_ingest_path(repo.path, "sample")
    data = bytes(range(256)) * 4
    got = mem.code_at("sample", "img.bin")
    assert got["binary"] is True and got["size"] == len(data)
    assert got["sha256"] == hashlib.sha256(data).hexdigest()
    assert got["returned_bytes"] == 0 and "content" not in got and "content_base64" not in got


def test_non_utf8_text_is_served_as_base64(mem: recuerdo.Memory, repo: Repo) -> None:
    mem.code_ingest_path(repo.path, "sample")
    got = mem.code_at("sample", "latin.txt")
    assert base64.b64decode(got["content_base64"]) == "caf\xe9 au lait\n".encode("latin-1")
    assert "content" not in got


def test_refused_files_never_reach_the_disk(base: Path, mem: recuerdo.Memory, repo: Repo) -> None:
    """The secret guard refuses whole files: no byte of them is in any file of the store."""
    mem.code_ingest_path(repo.path, "sample")
    mem._upkeep.drain()
    mem._store.reclaim()
    stored = b"".join(p.read_bytes() for p in base.rglob("*") if p.is_file())
    assert CREDENTIAL.split('"')[1].encode() not in stored
    assert b"DEBUG=1" not in stored and b"not really a key" not in stored
    assert b"feature work" in stored  # kept files are there, uncompressed (short)


def test_rename_is_followed_by_blame(mem: recuerdo.Memory, repo: Repo) -> None:
    """b.txt was a.txt: its blame names the rename and, before it, the addition of a.txt."""
    mem.code_ingest_path(repo.path, "sample")
    blame = mem.code_blame("sample", "b.txt")
    assert blame["produced_by"]["did"] == "renamed"
    assert blame["produced_by"]["other_path"] == "a.txt"
    assert [e["did"] for e in blame["earlier"]] == ["added"]
    assert blame["earlier"][0]["ordinal"] == 1
    history = mem.code_history("sample", "a.txt")["history"]
    assert [(h["did"], h.get("other_path")) for h in history] == [
        ("renamed_away", "b.txt"),
        ("added", None),
    ]


def test_a_deleted_file_is_still_readable_before_its_deletion(
    mem: recuerdo.Memory, repo: Repo
) -> None:
    mem.code_ingest_path(repo.path, "sample")
    assert mem.code_at("sample", "old.txt")["kind"] == "deleted"
    before = mem.code_at("sample", "old.txt", rev="HEAD~4")
    assert before["kind"] == "file" and before["content"] == "to be deleted\n"


def test_merge_brings_side_commits_along(mem: recuerdo.Memory, repo: Repo) -> None:
    """The merge's changes are what it brought in; its side commit is listed under it and a
    revision naming that side commit is refused by name."""
    mem.code_ingest_path(repo.path, "sample")
    merge = mem.code_changes_since("sample", "HEAD~2", limit=1)["commits"][0]
    assert merge["subject"] == "Merge side"
    assert [f["path"] for f in merge["files"]] == ["feature.txt"]
    assert [s["subject"] for s in merge["merged"]] == ["Side feature"]
    side = repo.git("rev-parse", "side")
    with pytest.raises(recuerdo.errors.RevisionNotFound, match="side branch"):
        mem.code_at("sample", "feature.txt", rev=side)


def test_incremental_ingest_reads_only_new_commits(mem: recuerdo.Memory, repo: Repo) -> None:
    mem.code_ingest_path(repo.path, "sample")
    repo.commit("More", {"README.md": "# Sample\nchanged\n"})
    repo.commit("Again", {"new.txt": "new\n"})
    seen: list[tuple[int, int]] = []
    done = mem.code_ingest_path(repo.path, "sample", progress=lambda d, t: seen.append((d, t)))
    assert done["new_commits"] == 2 and seen[-1] == (2, 2)
    assert done["ingested_through"]["ordinal"] == 7
    assert mem.code_at("sample", "README.md")["content"] == "# Sample\nchanged\n"
    again = mem.code_ingest_path(repo.path, "sample")
    assert again["state"] == "unchanged" and again["new_commits"] == 0


def test_a_moved_ref_drops_commits_and_never_reuses_ordinals(
    mem: recuerdo.Memory, repo: Repo
) -> None:
    mem.code_ingest_path(repo.path, "sample")
    lost = repo.commit("Lost work", {"README.md": "lost\n", "lost.txt": "x\n"})
    mem.code_ingest_path(repo.path, "sample")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.commit("Rewritten", {"other.txt": "y\n"})
    done = mem.code_ingest_path(repo.path, "sample")
    assert done["moved"] is True and done["dropped_commits"] == 1
    assert done["ingested_through"]["ordinal"] == 7  # ordinal 6 stays the lost commit's
    assert mem.code_at("sample", "README.md")["content"] == "# Sample\nThe quick brown fox jumps.\n"
    assert mem.code_at("sample", "lost.txt")["state"] == "nothing_stored"
    with pytest.raises(recuerdo.errors.RevisionNotFound, match="no longer on branch"):
        mem.code_at("sample", "README.md", rev=lost)
    since = mem.code_changes_since("sample", lost)
    assert since["moved"]["fork_point"]["ordinal"] == 5
    assert [c["subject"] for c in since["commits"]] == ["Rewritten"]
    assert mem.code_status("sample")["dropped_commits"] == 1


def test_a_repository_follows_one_branch(mem: recuerdo.Memory, repo: Repo) -> None:
    mem.code_ingest_path(repo.path, "sample")
    with pytest.raises(recuerdo.InvalidInput, match="follows branch 'main'"):
        mem.code_ingest_path(repo.path, "sample", branch="side")
    side = mem.code_ingest_path(repo.path, "sample-side", branch="side")
    assert side["new_commits"] == 3  # initial, rename, side feature


def test_a_path_that_is_not_a_repository_is_refused(mem: recuerdo.Memory, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(recuerdo.errors.GitUnreadable):
        mem.code_ingest_path(tmp_path / "plain", "plain")
    with pytest.raises(recuerdo.errors.RepoNotIngested):
        mem.code_status("plain")
