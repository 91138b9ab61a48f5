"""A store's planner statistics as a large store has them (for the plan tests)."""

from __future__ import annotations

from pathlib import Path

from recuerdo.store.sqlite import files


def grown_copy(location: str, copy: Path, rows: int) -> str:
    """A copy of the store at ``location`` with its statistics refreshed as at a close, then
    grown (:func:`_as_if_grown`)."""
    from recuerdo.store.sqlite import statistics

    conn = files.connect(location)
    try:
        conn.execute("VACUUM INTO ?", (str(copy),))
    finally:
        conn.close()
    conn = files.connect(str(copy))
    try:
        statistics.refresh(conn)
    finally:
        conn.close()
    _as_if_grown(str(copy), rows)
    return str(copy)


def _as_if_grown(location: str, rows: int) -> None:
    """The statistics of the workload's store as a large store has them after its last close:
    every analysed table holding ``rows`` rows, its figures per value grown in the same
    proportion (a figure of one row per value stays one), the empty tables' stated defaults
    left as they are. (Tables that stay small in a real store are grown too: a pessimistic
    test.)"""
    conn = files.connect(location)
    try:
        analysed = [
            (table, index, stat)
            for table, index, stat in conn.execute("SELECT tbl, idx, stat FROM sqlite_stat1")
            if "recuerdo-" not in stat and stat.split()[0].isdigit() and int(stat.split()[0])
        ]
        for table, index, stat in analysed:
            fields = stat.split()
            scale = rows / int(fields[0])
            grown = [
                str(max(1, round(int(f) * scale)))
                if f.isdigit() and (position < 2 or f != "1")
                else f
                for position, f in enumerate(fields)
            ]
            conn.execute(
                "UPDATE sqlite_stat1 SET stat = ? WHERE tbl = ? AND idx IS ?",
                (" ".join(grown), table, index),
            )
    finally:
        conn.close()
