"""Two processes saving one new key with one former key at once (decision 0138): the note at
the former key is moved once and holds both writes; no second note is made at either key, and
neither save fails. Both stores serialize a memory's writers; this guards that the move is
inside the serialized part (a lookup outside it would let both writers miss the moved note and
one create a second note, or fail on the key's unique index)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import recuerdo

from .forks import python_command
from .postgres import opened_on

ROUNDS = 40

SAVER = """
import json, sys, recuerdo
name, where, writer = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
with recuerdo.open(name, **where) as mem:
    mem = mem.agent(writer)
    for i in range(int(sys.argv[4])):
        mem.save("Editor", f"{writer} {i}", key=f"shop/prefs/{i}", former_key=f"prefs/{i}")
print("ok")
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_moving_one_note_make_one_note(backend: str, base: Path) -> None:
    with opened_on(backend, base, "race") as (name, where):
        with recuerdo.open(name, **where) as mem:
            ids = [mem.save("Editor", "vim", key=f"prefs/{i}")["id"] for i in range(ROUNDS)]
        procs = [
            subprocess.Popen(
                python_command(SAVER, name, json.dumps(where, default=str), w, str(ROUNDS)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in ("a", "b")
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.strip() == "ok", err
        with recuerdo.open(name, **where) as mem:
            for i, item_id in enumerate(ids):
                note = mem.get(item_id)
                assert (note["key"], note["version"]) == (f"shop/prefs/{i}", 3)
                assert note["content"] in {f"a {i}", f"b {i}"}
                texts = {mem.revision(item_id, version=v)["content"] for v in (2, 3)}
                assert texts == {f"a {i}", f"b {i}"}
            moves = [line for line in mem.journal(limit=1000) if line["operation"] == "move"]
            assert sorted(line["item_id"] for line in moves) == sorted(ids)
            records = mem.export(limit=1024)["records"]
            keys = sorted(r["note_key"] for r in records if "note_key" in r)
            assert keys == sorted(f"shop/prefs/{i}" for i in range(ROUNDS))
