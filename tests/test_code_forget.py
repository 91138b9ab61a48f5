"""Forgetting a code scope erases the repository from the code store (decision 0095).

``forget_knowledge(all=True, scope="code:<repo>")`` deleted the scope's items only: ``code_at``
still served the files, every blob, change and commit stayed in the database file, and after a
new commit the re-ingest never made the file searchable again (its tree row pointed at the
deleted item). Over the file store, the in-memory store and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import recuerdo
from recuerdo.code.git import GitRepo
from recuerdo.errors import Conflict, RepoNotIngested

from .gitrepo import Repo

MARK = "Vorpalizerquint"  # in a file
SAID = "Zyxquorblatmsg"  # in a commit message only
TABLES = ("code_repos", "code_commits", "code_changes", "code_tree", "code_blobs")


pytestmark = pytest.mark.usefixtures("no_model")  # the code store's own search, no vectors


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "r")
    repo.commit(f"first plan {SAID}", {"plan.py": f'PLAN = "{MARK} launch"\n', "other.txt": "x\n"})
    repo.commit("second", {"other.txt": "x\ny\n"})
    return repo


def _rows(mem: recuerdo.Memory) -> dict[str, int]:
    with mem._store.read() as tx:
        return {
            t: int(tx.scalar(f"SELECT count(*) FROM {t} WHERE tenant = ?", (mem.tenant,)))
            for t in TABLES
        }


def _found(mem: recuerdo.Memory, word: str) -> list[str]:
    mem._upkeep.drain()
    return [hit["title"] for hit in mem.search(word, types=["code"])["results"]]


def test_forgetting_the_scope_erases_the_repository_and_a_new_ingest_starts_over(
    memory: recuerdo.Memory, repo: Repo
) -> None:
    memory.code_ingest_path(repo.path, "r")
    assert _found(memory, MARK) == ["plan.py"]
    reply = memory.forget_knowledge("code:r", all=True)
    assert reply["code_repos_removed"] == 1 and reply["items_removed"] == 2
    assert _rows(memory) == dict.fromkeys(TABLES, 0)
    for read in (
        lambda: memory.code_at("r", "plan.py"),
        lambda: memory.code_history("r", "plan.py"),
        lambda: memory.code_status("r"),
    ):
        with pytest.raises(RepoNotIngested):
            read()
    assert _found(memory, MARK) == []
    # A later commit and ingest: the repository starts over, its files searchable again.
    repo.commit("third", {"other.txt": "x\ny\nz\n"})
    again = memory.code_ingest_path(repo.path, "r")
    assert again["state"] == "ingested" and again["new_commits"] == 3
    assert again["ingested_through"]["ordinal"] == 3
    assert memory.code_at("r", "plan.py")["content"] == f'PLAN = "{MARK} launch"\n'
    assert _found(memory, MARK) == ["plan.py"]
    assert memory.forget_knowledge("code:r", all=True)["code_repos_removed"] == 1


def test_a_blob_another_repository_holds_stays(memory: recuerdo.Memory, repo: Repo) -> None:
    memory.code_ingest_path(repo.path, "r")
    memory.code_ingest_path(repo.path, "twin")  # the same blobs, shared by the tenant
    memory.forget_knowledge("code:r", all=True)
    assert memory.code_at("twin", "plan.py")["content"] == f'PLAN = "{MARK} launch"\n'
    assert _rows(memory)["code_blobs"] == 3  # plan.py and two versions of other.txt
    memory.forget_knowledge("code:twin", all=True)
    assert _rows(memory) == dict.fromkeys(TABLES, 0)


def test_other_scopes_forget_as_before(memory: recuerdo.Memory, repo: Repo) -> None:
    memory.code_ingest_path(repo.path, "r")
    memory.remember_knowledge("A note about the launch.", scope="project")
    reply = memory.forget_knowledge("project", all=True)
    assert "code_repos_removed" not in reply
    assert _rows(memory)["code_commits"] == 2


@pytest.fixture
def on_disk(base: Path) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("code", base_dir=base)
    yield memory
    memory.close()


def test_no_byte_of_the_repository_stays_in_the_database_files(
    base: Path, on_disk: recuerdo.Memory, repo: Repo
) -> None:
    on_disk.code_ingest_path(repo.path, "r")
    assert _found(on_disk, MARK) == ["plan.py"]
    on_disk.code_history("r", "plan.py")
    on_disk._store.reclaim()
    stored = b"".join(p.read_bytes() for p in base.rglob("*") if p.is_file())
    assert MARK.encode() in stored and SAID.encode() in stored  # the check can see them
    on_disk.forget_knowledge("code:r", all=True)
    on_disk._upkeep.drain()
    on_disk._store.reclaim()
    stored = b"".join(p.read_bytes() for p in base.rglob("*") if p.is_file())
    assert MARK.encode() not in stored and MARK.lower().encode() not in stored
    assert SAID.encode() not in stored


def test_an_ingest_reusing_blobs_a_forget_erased_meanwhile_is_refused(
    memory: recuerdo.Memory, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest reads which blobs are stored, then git, then writes: a forget in between
    erased blobs it meant to point at. It answers conflict (try again), never a change row
    pointing at nothing (read as blob_corrupt)."""
    memory.code_ingest_path(repo.path, "r")
    twin = Repo(tmp_path / "twin")
    twin.git("pull", "-q", str(repo.path), "main")
    twin.commit("new", {"new.txt": "new\n"})
    reading = GitRepo.blobs

    def forget_meanwhile(self: GitRepo, ids: Sequence[str]) -> Iterator[tuple[str, bytes]]:
        monkeypatch.setattr(GitRepo, "blobs", reading)
        memory.forget_knowledge("code:r", all=True)
        yield from reading(self, ids)

    monkeypatch.setattr(GitRepo, "blobs", forget_meanwhile)
    with pytest.raises(Conflict):
        memory.code_ingest_path(twin.path, "twin")
    memory.code_ingest_path(twin.path, "twin")  # again: every blob read from git
    assert memory.code_at("twin", "plan.py")["content"] == f'PLAN = "{MARK} launch"\n'
