"""What an Engram import writes is what the Engram profile reads (decision 0102): projects are
matched as Engram matches them (trimmed, lower-cased) by one mapping both use. JSON nested too
deep to parse is refused as the source's kind refuses it, not a crash."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import recuerdo

from .forks import recuerdo_command
from .importing import SOURCES, run_import, stored, totals
from .test_mcp import call, stdio_session


def _export(folder: Path, observations: list[dict[str, Any]], **extra: Any) -> Path:
    path = folder / "export.json"
    path.write_text(
        json.dumps(
            {
                "version": "1",
                "exported_at": "2025-03-01T10:00:00Z",
                "sessions": [],
                "observations": observations,
                "prompts": [],
                **extra,
            }
        )
    )
    return path


INTENTS = {
    "id": 7,
    "session_id": "s1",
    "type": "decision",
    "title": "Payments via intents",
    "content": "We use payment intents with idempotency keys.",
    "project": " ShopAPI ",
    "scope": "project",
    "created_at": "2025-03-01 10:00:00",
}


def test_an_imported_project_is_the_project_the_engram_tools_read(
    base: Path, tmp_path: Path
) -> None:
    """An export spelling its project 'ShopAPI' lands in project:shopapi, where mem_search and
    mem_context with project 'ShopAPI' (or 'shopapi') find it, and mem_save adds beside it."""
    prompt = {
        "id": 1,
        "session_id": "s1",
        "content": "How do we take payments?",
        "project": "ShopAPI",
    }
    path = _export(tmp_path, [INTENTS], prompts=[prompt])
    first = run_import(base, "engram", path)
    assert first["counts"]["observations"]["imported"] == 1
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        hits = memory.search("payment intents", scope="project:shopapi")["results"]
        assert "Payments via intents" in [hit.get("title") for hit in hits]
        assert memory.search("payment intents", scope="project:ShopAPI")["results"] == []
        documents = memory.export(scope="project:shopapi")["records"]
        assert [r["text"] for r in documents if r["record"] == "document"] == [prompt["content"]]
    before = stored(base)
    again = run_import(base, "engram", path)
    assert stored(base) == before and totals(again)["imported"] == totals(again)["updated"] == 0

    async def scenario() -> None:
        async with stdio_session(base, memory="target", prof="engram") as session:
            for project in ("ShopAPI", "shopapi"):
                failed, found = await call(
                    session, "mem_search", {"query": "payment intents", "project": project}
                )
                assert failed is False
                assert "Payments via intents" in [r["title"] for r in found["results"]]
            failed, context = await call(session, "mem_context", {"project": "ShopAPI"})
            assert failed is False and "Payments via intents" in context["text"]

    anyio.run(scenario)


DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    ("kind", "name", "text"),
    [
        ("engram", "deep.json", '{"version": 1, "observations": ' + DEEP + "}"),
        ("mcp-memory", "deep.jsonl", DEEP + "\n"),
    ],
)
def test_json_nested_too_deep_is_refused_as_invalid(
    base: Path, tmp_path: Path, kind: str, name: str, text: str
) -> None:
    """The library and the CLI refuse it with import_source_invalid; nothing is written."""
    run_import(base, "mcp-memory", SOURCES["mcp-memory"])
    before = stored(base)
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(recuerdo.ImportSourceInvalid) as refused:
        run_import(base, kind, path)
    assert "too deep" in refused.value.detail
    assert stored(base) == before
    shown = subprocess.run(
        recuerdo_command(
            "--state-dir", str(base), "--memory", "target", "--json", "import-from", kind, str(path)
        ),
        capture_output=True,
        text=True,
        env={
            "RECUERDO_EMBEDDER": "none",
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        timeout=120,
        check=False,
    )
    assert shown.returncode == 1, shown.stderr
    assert json.loads(shown.stdout)["error"] == "import_source_invalid", shown.stderr[-2000:]
    assert stored(base) == before


@pytest.mark.parametrize(
    "summary",
    [
        "The refunds flow is half done; the ledger still double counts. " * 40,
        "Deployed with password=hunter2-Orchid; <private>the vault pin is 4471</private> done.",
    ],
    ids=["over-the-limit", "redacted"],
)
def test_a_summary_is_imported_once(base: Path, summary: str) -> None:
    """session_end keeps a summary as its note holds it, cut to the note size limit (0112); an
    import again compared the session's summary with the whole one, so it ended the session
    again at every import ('updated', the summary note's duplicate count going up). So did a
    summary holding a credential or a private span: the session keeps it redacted."""
    session = {"id": "s1", "project": "shop", "ended_at": "2025-03-01 11:00:00", "summary": summary}
    source = _export(base, [], sessions=[session])
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        memory.configure(note_limit_bytes=1024)
    first = run_import(base, "engram", source)
    assert first["counts"]["sessions"]["imported"] == 1
    before = stored(base)
    again = run_import(base, "engram", source)
    assert again["counts"]["sessions"] == {
        "read": 1,
        "imported": 0,
        "updated": 0,
        "unchanged": 1,
        "skipped": 0,
    }
    assert stored(base) == before
    with recuerdo.open("target", base_dir=base, embedder="none") as memory:
        kept = memory.session_start("s1")["summary"]
    assert kept is not None and len(kept.encode()) <= 1024
    assert summary.startswith(kept) or ("hunter2" not in kept and "4471" not in kept)
