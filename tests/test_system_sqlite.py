"""The embedded store on the interpreter's own SQLite (where ``pysqlite3-binary`` is not
installed: it is a Linux-only dependency). On this machine that library is 3.40, whose FTS5
has no ``secure-delete``: opening a store used to fail on it ("SQL logic error"), and forgetting an
entry left its words in the full-text index's pages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The bundled library is kept out before recuerdo picks its driver.
_SCRIPT = """
import json, sys
sys.modules["pysqlite3"] = None
import recuerdo
from recuerdo.store.sqlite.driver import sqlite3

base, word, other = sys.argv[1], sys.argv[2], sys.argv[3]
with recuerdo.open("plain", base_dir=base) as memory:
    kept = memory.remember("learning", "rotate the signing keys every quarter")
    entry = memory.remember("learning", f"the {word} runbook lives in the wiki")
    note = memory.save("Runbook", f"steps for {other}, then the release", key="runbook")
    memory.save("Keeper", "a note that stays", key="keeper")
    found = [hit["id"] for hit in memory.search(word)["results"]]
    forgot = memory.forget(entry)
    deleted = memory.delete(note["id"], hard=True)
    left = [hit["id"] for hit in memory.search("signing keys")["results"]]
    memory._upkeep.drain()
    with memory._store.read() as tx:
        trigram_rows = [
            tx.scalar(f"SELECT count(*) FROM entry_trigrams WHERE entry_trigrams MATCH '{text}'")
            for text in ("sig", "tay")  # one trigram each: of the entry, of the keeper note
        ]
    print(json.dumps({
        "version": sqlite3.sqlite_version, "kept": kept, "entry": entry, "found": found,
        "forgot": forgot, "deleted": bool(deleted), "left": left, "location": memory.location,
        "trigram_rows": trigram_rows,
    }))
"""


def test_a_store_on_the_interpreters_sqlite_works_and_forgets_for_real(tmp_path: Path) -> None:
    word, other = "zanzibarian", "quokkaesque"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path), word, other],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reply = json.loads(done.stdout.splitlines()[-1])
    assert reply["found"] == [reply["entry"]]
    assert reply["forgot"] is True
    assert reply["deleted"] is True
    assert reply["left"] == [reply["kept"]]
    # The substring index holds the one entry left, and no note (the merge after a forget
    # fills it again with what it indexes, not with every item).
    assert reply["trigram_rows"] == [1, 0]
    # Nothing of the forgotten entry and the hard-deleted note stays anywhere in the files.
    files = [path for path in Path(reply["location"]).parent.rglob("*") if path.is_file()]
    assert files
    for path in files:
        held = path.read_bytes()
        assert word.encode() not in held, path.name
        assert other.encode() not in held, path.name
