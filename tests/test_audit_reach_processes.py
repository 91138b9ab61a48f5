"""A search still buffered in another process when a forget commits (decisions 0085, 0139),
with a real second process: after the owner's forget none of its records quoting the name
reaches the audit; after a forget confined to project:a, what returned the item does not
either, and its searches beyond the forget's reach do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import recuerdo

from .conftest import audit_kept
from .forks import python_command
from .postgres import opened_on

SEARCHER = """
import json, sys
import recuerdo
from recuerdo.core.upkeep import Upkeep

Upkeep.poke = lambda self, *args, **kwargs: None  # its records stay buffered until told
name, where = sys.argv[1], json.loads(sys.argv[2])
with recuerdo.open(name, embedder="none", **where) as memory:
    memory.search("Zorblax", scope="project:b")
    memory.search("Zorblax")
    assert memory.search("quixotic")["results"]
    memory.search("deploy window", scope="project:b")
    print("buffered", flush=True)
    sys.stdin.readline()
    memory._audit.flush(memory._store)
    print(memory._audit.dropped, flush=True)
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("who", ["owner", "confined"])
def test_a_forget_reaches_the_records_another_process_still_holds(
    backend: str, base: Path, who: str
) -> None:
    with (
        opened_on(backend, base, "processes") as (name, where),
        recuerdo.open(name, embedder="none", **where) as memory,
    ):
        lim = memory.for_principal("lim", memory.tenant, scopes=["project:a"])
        caller = memory if who == "owner" else lim
        note = caller.save("Zorblax", "quixotic plan", scope="project:a", key="Zorblax")["id"]
        child = subprocess.Popen(
            python_command(SEARCHER, name, json.dumps(where, default=str)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "buffered", child.stderr
            caller.delete(note, hard=True, scope="project:a")
            out, err = child.communicate("\n", timeout=120)
        finally:
            child.kill()
        assert child.returncode == 0, err
        dropped = int(out.split()[-1])
        kept = audit_kept(memory)
        if who == "owner":
            # Taken before the tenant's forget: every one dropped, too many as before.
            assert (dropped, kept) == (4, [])
        else:
            # What returned the item (both searches over every scope) goes; the
            # searches in project:b, beyond the forget's reach, stay.
            assert dropped == 2
            assert sorted(kept) == ["Zorblax", "deploy window"]
        assert set(audit_kept(memory, "returned")) <= {"[]"}
