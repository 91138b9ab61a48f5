"""Whole-memory backup and restore: a deep comparison shows no difference, over random
memories; a cut, newer or misdirected archive is refused and creates nothing."""

from __future__ import annotations

import gzip
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.engine import restore_memory
from recuerdo.store.sqlite import sqlite3

from .forks import recuerdo_command

DERIVED = ("chunk_fts", "entry_trigrams", "sqlite_sequence", "sqlite_stat")


def deep_dump(path: str | Path) -> dict[str, list[str]]:
    """Every row of every table a memory keeps (not the derived full-text indexes, nor when
    migrations ran), through a connection of its own."""
    conn = sqlite3.connect(str(path))
    try:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith(DERIVED)
        ]
        dump = {}
        for name in names:
            query = f'SELECT * FROM "{name}"'
            if name == "_migrations":
                query = "SELECT name FROM _migrations"
            dump[name] = sorted(repr(tuple(row)) for row in conn.execute(query))
        return dump
    finally:
        conn.close()


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(lambda t: t.strip())
labels = st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)


@st.composite
def memories(draw: st.DrawFn) -> list[tuple[str, tuple[Any, ...]]]:
    """A script of writes touching every family a backup must carry."""
    script: list[tuple[str, tuple[Any, ...]]] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(
            st.sampled_from(
                [
                    "entry",
                    "note",
                    "plan",
                    "rule",
                    "fact",
                    "messages",
                    "configure",
                    "mute",
                    "forget",
                    "pin",
                ]
            )
        )
        if kind == "entry":
            script.append((kind, (draw(texts), draw(st.lists(labels, max_size=3)), draw(labels))))
        elif kind == "note":
            versions = draw(st.lists(texts, min_size=1, max_size=3))
            script.append((kind, (draw(labels), versions, draw(st.booleans()))))
        elif kind == "plan":
            steps = draw(st.lists(labels, min_size=1, max_size=4, unique=True))
            script.append((kind, (draw(labels), steps, draw(st.integers(0, len(steps))))))
        elif kind == "rule":
            script.append((kind, (draw(labels), draw(st.integers(0, 9)))))
        elif kind == "fact":
            names = draw(st.lists(labels, min_size=2, max_size=2, unique=True))
            script.append((kind, (names[0], names[1], draw(st.booleans()))))
        elif kind == "messages":
            script.append((kind, (draw(labels), draw(st.lists(texts, min_size=1, max_size=3)))))
        elif kind == "configure":
            script.append((kind, (draw(st.integers(2, 100)),)))
        elif kind == "pin":
            script.append((kind, (draw(labels), draw(st.booleans()))))
        else:
            script.append((kind, (draw(labels),)))
    return script


def play(memory: recuerdo.Memory, script: list[tuple[str, tuple[Any, ...]]]) -> None:
    for kind, args in script:
        if kind == "entry":
            text, tags, scope = args
            memory.remember("learning", text, tags, scope=scope)
        elif kind == "note":
            key, versions, link = args
            for body in versions:
                saved = memory.save(f"Note {key}", body, key=key)
            if link:
                entry = memory.remember("context", f"about {key}")
                memory.link(saved["id"], entry)
        elif kind == "plan":
            task, steps, done = args
            # A task drawn twice resumes the first plan, with its own steps.
            plan = memory.create_progress(task, steps)
            for step in [s["name"] for s in plan["steps"]][:done]:
                memory.complete_step(task, step, f"{step} ok")
        elif kind == "rule":
            memory.add_rule(args[0], "must", f"x <= {args[1]}")
            memory.check_rules(None, {"x": args[1] + 1})
        elif kind == "fact":
            memory.relate(args[0], args[1], "knows", replaces=args[2])
        elif kind == "messages":
            conversation, turns = args
            memory.add_messages(conversation, [{"speaker": "Ann", "text": t} for t in turns])
        elif kind == "pin":
            name, forget_one = args
            kept = memory.save(f"Pinned {name}", f"pinned text {name}")["id"]
            gone = memory.remember("learning", f"pinned then forgotten {name}")
            memory.pin(kept)
            memory.pin(gone)
            memory.context_set(name, [gone, kept])
            if forget_one:
                memory.forget(gone)  # its pin and its place in the set go with it
        elif kind == "configure":
            memory.configure(audit_retention_days=args[0])
        elif kind == "mute":
            memory.remember_about("user", f"likes {args[0]}", category=args[0])
            memory.mute(args[0])
        else:
            gone = memory.remember("learning", f"to forget {args[0]}")
            memory.forget(gone)
        memory.search(kind)  # the audit is part of the memory too


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(script=memories())
@example(script=[("plan", ("a0", ["a", "c"], 1)), ("plan", ("a0", ["b"], 1))])  # a resumed task
def test_restore_rebuilds_the_memory_exactly(script: list[tuple[str, tuple[Any, ...]]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        with recuerdo.open("original", base_dir=base, embedder="none") as memory:
            play(memory, script)
            memory._upkeep.drain()
            memory.backup(base / "memory.rbk")
        original = deep_dump(base / ".recuerdo" / "state" / "original.db")
        restore_memory("copy", base / "memory.rbk", base_dir=base)
        with recuerdo.open("copy", base_dir=base, embedder="none") as copy:
            copy._upkeep.drain()
        assert deep_dump(base / ".recuerdo" / "state" / "copy.db") == original


def test_ids_are_never_given_out_twice_after_a_restore(base: Path) -> None:
    with recuerdo.open("ids", base_dir=base, embedder="none") as memory:
        kept = memory.remember("learning", "kept")
        newest = memory.remember("learning", "forgotten before the backup")
        memory.forget(newest)
        memory.backup(base / "ids.rbk")
    restore_memory("again", base / "ids.rbk", base_dir=base)
    with recuerdo.open("again", base_dir=base, embedder="none") as copy:
        assert [e["id"] for e in copy.recall()] == [kept]
        assert copy.remember("learning", "after") > newest


def _rewrite(source: Path, target: Path, change: Any) -> None:
    with gzip.open(source, "rb") as given:
        lines = [json.loads(line) for line in given]
    lines = change(lines)
    with gzip.open(target, "wb") as out:
        out.writelines((json.dumps(line) + "\n").encode() for line in lines)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda lines: lines[:-1], recuerdo.InvalidInput),  # no end record
        (lambda lines: [*lines[:-2], lines[-1]], recuerdo.InvalidInput),  # a row missing
        (
            lambda lines: [{**lines[0], "schema": [*lines[0]["schema"], "m999_later"]}, *lines[1:]],
            recuerdo.StoreTooNew,
        ),
        (lambda lines: [{"format": "something else"}, *lines[1:]], recuerdo.InvalidInput),
    ],
)
def test_a_bad_archive_is_refused_and_creates_nothing(
    base: Path, damage: Any, error: type[Exception]
) -> None:
    with recuerdo.open("src", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "one")
        memory.remember("learning", "two")
        memory.backup(base / "good.rbk")
    _rewrite(base / "good.rbk", base / "bad.rbk", damage)
    with pytest.raises(error):
        restore_memory("target", base / "bad.rbk", base_dir=base)
    assert not list((base / ".recuerdo" / "state").glob("*target*"))


def test_restore_never_overwrites_a_memory(base: Path) -> None:
    with recuerdo.open("here", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "mine")
        memory.backup(base / "here.rbk")
    before = deep_dump(base / ".recuerdo" / "state" / "here.db")
    with pytest.raises(recuerdo.Conflict):
        restore_memory("here", base / "here.rbk", base_dir=base)
    assert deep_dump(base / ".recuerdo" / "state" / "here.db") == before


def test_a_raw_backup_is_a_consistent_copy_of_the_live_store(base: Path) -> None:
    with recuerdo.open("live", base_dir=base, embedder="none") as memory:
        memory.remember("learning", "in the copy")
        memory._upkeep.drain()
        report = memory.backup(base / "live-copy.db", raw=True)
        assert report["raw"] is True and report["bytes"] > 0
        assert deep_dump(base / "live-copy.db") == deep_dump(memory.location)


def test_the_cli_backs_up_and_restores(base: Path) -> None:
    with recuerdo.open("cli", base_dir=base, embedder="none") as memory:
        memory.save("Runbook", "Restart the queue first.", key="runbook")
    command = recuerdo_command("--state-dir", str(base))
    done = subprocess.run(
        [*command, "--memory", "cli", "--json", "backup", str(base / "cli.rbk")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["rows"] > 0
    subprocess.run(
        [*command, "--memory", "cli2", "restore", str(base / "cli.rbk")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    with recuerdo.open("cli2", base_dir=base, embedder="none") as copy:
        hit = copy.search("queue")["results"][0]
        assert copy.get(hit["id"])["content"] == "Restart the queue first."
