"""Stored code is searchable: hits name the file, the line span and the commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import recuerdo

from .gitrepo import Repo

pytestmark = pytest.mark.usefixtures("no_model")  # the code store's own search, no vectors


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "app")
    body = "".join(f"def helper_{n}():\n    return {n}\n\n" for n in range(40))
    repo.commit(
        "Start",
        {
            "src/app.py": body + "def frobnicate_widgets():\n    return 'done'\n",
            "docs/guide.md": "How to frobnicate widgets by hand.\n",
            "img.bin": b"\0frobnicate\0",
        },
    )
    return repo


@pytest.fixture
def mem(base: Path, repo: Repo) -> Iterator[recuerdo.Memory]:
    memory = recuerdo.open("code", base_dir=base)
    memory.code_ingest_path(repo.path, "app")
    yield memory
    memory.close()


@pytest.mark.parametrize("drained", [False, True], ids=["just-ingested", "chunked"])
def test_hits_name_file_lines_and_commit(mem: recuerdo.Memory, repo: Repo, drained: bool) -> None:
    """Found before and after the indexer cuts the files into line chunks."""
    if drained:
        mem._upkeep.drain()
    hits = mem.search("frobnicate widgets", types=["code"], repo="app")["results"]
    by_path = {h["path"]: h for h in hits}
    assert set(by_path) == {"src/app.py", "docs/guide.md"}  # the binary file has no text
    app = by_path["src/app.py"]
    assert app["repo"] == "app" and app["commit"] == repo.head()
    lines = app["lines"]
    text = mem.code_at("app", "src/app.py")["content"].splitlines()
    assert any("frobnicate_widgets" in line for line in text[lines["start"] - 1 : lines["end"]])
    if drained:
        assert lines["end"] - lines["start"] < 60 and lines["end"] == len(text)


def test_path_prefix_narrows_and_plain_search_skips_code(mem: recuerdo.Memory) -> None:
    mem._upkeep.drain()
    hits = mem.search("frobnicate", path_prefix="docs/")["results"]
    assert [h["path"] for h in hits] == ["docs/guide.md"]
    assert mem.search("frobnicate")["state"] == "nothing_stored"
    assert mem.search("frobnicate", repo="other")["count"] == 0


def test_repo_with_other_types_is_refused(mem: recuerdo.Memory) -> None:
    with pytest.raises(recuerdo.InvalidInput, match="types must be"):
        mem.search("frobnicate", types=["note"], repo="app")


def test_search_follows_the_tip(mem: recuerdo.Memory, repo: Repo) -> None:
    """An ingest that changes or deletes a file changes what search finds."""
    mem._upkeep.drain()
    (repo.path / "docs" / "guide.md").unlink()
    repo.commit("Rewrite", {"src/app.py": "def reticulate_splines():\n    pass\n"})
    mem.code_ingest_path(repo.path, "app")
    assert mem.search("frobnicate", types=["code"])["count"] == 0
    mem._upkeep.drain()
    assert mem.search("frobnicate", types=["code"])["count"] == 0
    hit = mem.search("reticulate splines", types=["code"])["results"][0]
    assert hit["path"] == "src/app.py" and hit["commit"] == repo.head()
    assert hit["lines"] == {"start": 1, "end": 2}
