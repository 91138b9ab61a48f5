"""``recuerdo mirror status`` and ``pull`` read the ledger once per command (status read it again
for each file it listed, so a ledger of N files was parsed N + 1 times; pull read it three
times), with the same reports. Run in process (click's runner) so that the reads are counted
where they happen: every read of the ledger file goes through ``_json``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recuerdo.doors import mirror as mirror_door
from recuerdo.doors.cli import cli


@pytest.fixture
def runner(base: Path) -> CliRunner:
    return CliRunner(env={"RECUERDO_STATE_DIR": str(base), "RECUERDO_MEMORY": "work"})


@pytest.fixture
def ledger_reads(monkeypatch: pytest.MonkeyPatch, base: Path) -> Iterator[list[Path]]:
    """The ledger files read while the test runs (the real reads, counted on their way)."""
    ledger = (base / ".recuerdo" / "mirror.json").resolve()
    seen: list[Path] = []
    read = mirror_door._json

    def counted(path: Path) -> dict[str, Any]:
        if path.resolve() == ledger:
            seen.append(path)
        return read(path)

    monkeypatch.setattr(mirror_door, "_json", counted)
    yield seen


def run(runner: CliRunner, *args: str) -> tuple[int, Any]:
    result = runner.invoke(cli, ["--json", "mirror", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def three(runner: CliRunner, base: Path) -> list[Path]:
    """Three files pushed; then one changed here and one changed in memory."""
    files = [base / f"tasks-{n}.md" for n in range(3)]
    for n, file in enumerate(files):
        file.write_text(f"# Tasks {n}\n- [ ] step {n}\n")
        assert run(runner, "push", str(file), "--key", f"odd/f{n}/tasks")[0] == 0
    files[1].write_text("# Tasks 1\n- [ ] step 1\n- [ ] another\n")
    from recuerdo import open as open_memory

    with open_memory("work", base_dir=base) as memory:
        memory.save("tasks 2", "# Tasks 2\n- [x] step 2\n", key="odd/f2/tasks", kind="mirror")
    return files


@pytest.mark.parametrize("one", [False, True], ids=["every file", "one file"])
def test_status_reads_the_ledger_once(
    runner: CliRunner, three: list[Path], ledger_reads: list[Path], one: bool
) -> None:
    args = [str(three[2])] if one else []
    code, reports = run(runner, "status", *args)
    assert code == 0, reports
    assert len(ledger_reads) == 1, ledger_reads
    expected = ["memory_ahead"] if one else ["in_sync", "local_ahead", "memory_ahead"]
    assert [r["status"] for r in reports] == expected
    assert [Path(r["file"]).name for r in reports] == [
        f.name for f in ([three[2]] if one else three)
    ]


@pytest.mark.parametrize(
    ("name", "key", "reads", "status", "code"),
    [
        # The pull's read, then the read its record makes under the lock (read, change, write).
        ("tasks-2.md", None, 2, "in_sync", 0),
        ("tasks-1.md", None, 1, "refused", 1),  # the file is ahead: nothing written
        ("new.md", "odd/f2/tasks", 3, "in_sync", 0),  # never synced: its entry is made first
    ],
    ids=["memory ahead", "local ahead", "never synced"],
)
def test_pull_reads_the_ledger_once(
    runner: CliRunner,
    base: Path,
    three: list[Path],
    ledger_reads: list[Path],
    name: str,
    key: str | None,
    reads: int,
    status: str,
    code: int,
) -> None:
    file = base / name
    before = file.read_text() if file.exists() else None
    args = ["--key", key] if key else []
    exit_code, report = run(runner, "pull", str(file), *args)
    assert (exit_code, report["status"]) == (code, status), report
    assert len(ledger_reads) == reads, ledger_reads
    if status == "in_sync":
        assert file.read_text() == "# Tasks 2\n- [x] step 2\n"
        assert run(runner, "status", str(file))[1][0]["status"] == "in_sync"
    else:
        assert file.read_text() == before


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The memories the CLI opens while the test runs (the real opens, counted on their way)."""
    from recuerdo.doors import cli as cli_door

    seen: list[str] = []
    real = cli_door.open_memory

    def counted(name: str, **options: Any) -> Any:
        seen.append(name)
        return real(name, **options)

    monkeypatch.setattr(cli_door, "open_memory", counted)
    yield seen


def test_status_opens_the_memory_once_for_every_file(
    runner: CliRunner, three: list[Path], opens: list[str]
) -> None:
    """Each file's copy was read by a call that opened and closed the memory (13-17 ms a
    file, its indexes brought up to date at each close): one open serves them all."""
    code, reports = run(runner, "status")
    assert code == 0, reports
    assert [r["status"] for r in reports] == ["in_sync", "local_ahead", "memory_ahead"]
    assert opens == ["work"]
