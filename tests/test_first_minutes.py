"""A newcomer's first minutes: the client configuration `serve` prints works as pasted, a busy
port is one line, `check_rules` fails a script on a must-rule, `memories` lists what a state dir
holds, `summary` covers every family, and the CLI uses a running server instead of loading the
model again."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import recuerdo

from .conftest import Server, statements_run
from .forks import recuerdo_command


def recuerdo_cli(
    base: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        recuerdo_command("--state-dir", str(base), *args),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        check=False,
    )


def printed_stdio_config(server: Server) -> dict[str, Any]:
    """The stdio MCP client configuration the server printed on start."""
    assert server.process.stdout is not None
    fd = server.process.stdout.fileno()
    os.set_blocking(fd, False)
    out = b""
    try:
        while chunk := os.read(fd, 65536):
            out += chunk
    except BlockingIOError:
        pass
    text = out.decode()
    head = "MCP client configuration (stdio):"
    assert head in text, text
    config, _ = json.JSONDecoder().raw_decode(text[text.index(head) + len(head) :].lstrip())
    [entry] = config["mcpServers"].values()
    return dict(entry)


@pytest.fixture
def served(base: Path) -> Iterator[Server]:
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "API is slow on Mondays", ["api"])
    server = Server(base, memory="shop")
    yield server
    server.stop()


# -- 1. the printed MCP client configuration ---------------------------------------------------


def test_the_printed_stdio_config_runs_verbatim(served: Server, base: Path) -> None:
    """Pasted as printed into the official MCP client, from another folder and without any
    RECUERDO_ variable, the configuration reaches the served memory: its tools list, and a
    recall returns what the memory holds."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    entry = printed_stdio_config(served)
    assert os.path.isabs(entry["command"]) and Path(entry["command"]).exists()
    args = entry["args"]
    assert args[args.index("--state-dir") + 1] == str(base)
    assert args[args.index("--profile") + 1] == "native"
    params = StdioServerParameters(
        command=entry["command"],
        args=args,
        env={k: v for k, v in os.environ.items() if not k.startswith("RECUERDO_")},
        cwd=Path(sys.executable).anchor,
    )

    async def scenario() -> tuple[set[str], Any]:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                found = await session.call_tool("recall", {"tags": ["api"]})
                return tools, found

    tools, found = anyio.run(scenario)
    assert {"remember", "recall", "search", "summary"} <= tools
    assert not found.is_error
    assert "API is slow on Mondays" in json.dumps(found.structured_content)


@pytest.mark.parametrize(
    "order",
    [["mcp", "--memory", "shop"], ["--memory", "shop", "mcp"], ["mcp", "-m", "shop"]],
)
def test_the_memory_option_goes_before_or_after_mcp(base: Path, order: list[str]) -> None:
    """`recuerdo mcp --memory X` is accepted as `recuerdo --memory X mcp` is (stdin closed: the
    server ends at once)."""
    done = recuerdo_cli(base, *order)
    assert "No such option" not in done.stderr
    assert done.returncode == 0, done.stderr


def test_mcp_with_no_memory_named_fails_at_once(base: Path) -> None:
    """`recuerdo mcp` without --memory (or RECUERDO_MEMORY) is refused with exit code 2 as
    every command with no memory is: it served a stdio session whose every call failed, each
    telling the agent to add `?memory=NAME`, which a stdio client cannot."""
    env = {key: value for key, value in os.environ.items() if key != "RECUERDO_MEMORY"}
    done = subprocess.run(
        recuerdo_command("--state-dir", str(base), "mcp"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "memory_not_named" in done.stderr and "--memory NAME" in done.stderr
    assert not (base / ".recuerdo").exists()


# -- 2. a busy port ------------------------------------------------------------------------------


def test_a_busy_port_is_one_line_and_a_failure(base: Path) -> None:
    """With another socket listening on the port, `serve` exits non-zero with one line on
    stderr naming the port, prints no banner and no traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = recuerdo_cli(base, "--memory", "demo", "serve", "--port", str(port))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f":{port}" in lines[0] and "in use" in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert "serving" not in done.stdout


def test_make_serve_takes_a_port() -> None:
    """`make serve PORT=...` passes the port on (make -n prints the command it would run)."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        ["make", "-n", "serve", "PORT=7791"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '--port "7791"' in done.stdout


# -- 4. summary and memories ---------------------------------------------------------------------


def test_summary_counts_every_family(base: Path) -> None:
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "API is slow on Mondays")
        memory.save("Auth design", "Use JWT.", kind="decision", scope="project:shop")
        memory.add_messages(
            "c1", [{"speaker": "Ann", "text": "Hello"}, {"speaker": "Bo", "text": "Hi"}]
        )
        memory.relate("Ann", "Acme", "works_at")
        memory.create_progress("import", ["ingest", "load"])
        memory.add_rule("cap", "must", "discount <= 0.2")
        summary = memory.summary()
    assert summary["entries"] == 1 and summary["entries_by_category"] == {"learning": 1}
    assert summary["notes"] == 1
    assert (summary["conversations"], summary["messages"]) == (1, 2)
    assert (summary["entities"], summary["facts"]) == (2, 1)
    assert (summary["plans"], summary["plans_finished"]) == (1, 0)
    assert summary["rules"] == 1
    lines = summary["text"].splitlines()
    assert lines[0] == "Agent Memory: 1 entries, 1 rules"
    for expected in (
        "Notes: 1",
        "Conversations: 1 (2 messages)",
        "Knowledge: 2 entities",
        "Plans: 1",
    ):
        assert any(line.startswith(expected) for line in lines), lines


def _other_families(memory: recuerdo.Memory) -> None:
    kept = memory.save("Auth design", "Use JWT.", kind="decision", scope="user")
    memory.save("Cache", "Redis.", kind="decision", scope="user")
    gone = memory.save("Old idea", "Drop it.", kind="decision", scope="user")
    memory.delete(gone["id"])
    with memory._store.write() as tx:
        for note in (kept, gone):  # the deleted one is not counted as due
            tx.execute(
                "UPDATE items SET review_at = '2000-01-01T00:00:00Z' WHERE id = ?", (note["id"],)
            )
    memory.add_messages("c1", [{"speaker": "Ann", "text": "Hi"}, {"speaker": "Bo", "text": "Yo"}])
    memory.add_messages("c2", [{"speaker": "Ann", "text": "Bye"}])
    memory.ingest(base64.b64encode(b"A short text document.").decode(), name="doc.txt")
    memory.remember("learning", "API is slow on Mondays")


def test_summary_counts_notes_messages_and_documents(memory: recuerdo.Memory) -> None:
    _other_families(memory)
    summary = memory.summary()
    assert (summary["notes"], summary["notes_needing_review"]) == (2, 1)
    assert (summary["conversations"], summary["messages"]) == (2, 3)
    assert (summary["documents"], summary["entries"]) == (1, 1)


# The walks of one kind of item the counts may make, each over what it counts.
COUNTED_WALKS = {
    "items_scope_recent": "the notes, which overview counts by scope and kind",
    "items_by_session": "the items of sessions, for summary's conversations",
}
ITEM_WALK = re.compile(
    r"(SCAN (?:items|i)\b|SEARCH (?:items|i) USING (?:COVERING )?INDEX (\w+) \(tenant=\?\))"
)


@pytest.mark.parametrize("verb", ["summary", "overview", "status"])
def test_the_counts_walk_no_items(
    file_memory: recuerdo.Memory, monkeypatch: pytest.MonkeyPatch, verb: str
) -> None:
    """The counts of what a memory holds come from its tallies and from indexes (the notes due,
    the conversations, a reader's mail), never from a walk of every item, nor of every entry
    (an index of entries searched by the tenant alone): at 100,000 entries overview took
    155 ms, status 46 ms and summary 24 ms so (decision 0057)."""
    _other_families(file_memory)
    file_memory.agent("alice").bind_address("alice@local")
    file_memory.agent("bob").bind_address("bob@local")
    file_memory.agent("alice").send_message(["bob@local"], "Hi", "Lunch?")
    with statements_run(monkeypatch) as seen:
        getattr(file_memory.agent("alice"), verb)()
    reads = [(sql, params) for sql, params in seen if "items" in sql]
    assert reads, "the counts read nothing"
    with file_memory._store.read() as tx:
        plans = {
            sql: [row[3] for row in tx.all(f"EXPLAIN QUERY PLAN {sql}", params)]
            for sql, params in reads
        }
    walks = {
        sql: plan
        for sql, plan in plans.items()
        for line in plan
        if (found := ITEM_WALK.match(line)) and found.group(2) not in COUNTED_WALKS
    }
    assert not walks, walks


def test_memories_lists_each_memory_with_counts_and_size(base: Path) -> None:
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "one")
        memory.remember("learning", "two")
    with recuerdo.open("blog", base_dir=base) as memory:
        memory.save("Draft", "text", kind="note", scope="user")
    done = recuerdo_cli(base, "memories", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["memory"]: row for row in json.loads(done.stdout)}
    assert sorted(rows) == ["blog", "shop"]
    assert rows["shop"]["entries"] == 2 and rows["blog"]["notes"] == 1
    assert all(row["bytes"] > 0 for row in rows.values())
    table = recuerdo_cli(base, "memories").stdout.splitlines()
    assert table[0].split()[:3] == ["memory", "entries", "notes"]


def test_memories_of_an_empty_state_dir_creates_nothing(base: Path) -> None:
    done = recuerdo_cli(base, "memories")
    assert done.returncode == 0 and "no memories" in done.stdout
    assert list(base.iterdir()) == []


# -- 7. check_rules fails a script; the CLI uses a running server ---------------------------------


@pytest.mark.parametrize(
    ("level", "discount", "code"),
    [("must", 0.5, 1), ("must", 0.1, 0), ("should", 0.5, 0)],
)
def test_check_rules_exits_1_on_a_violated_must_rule(
    base: Path, level: str, discount: float, code: int
) -> None:
    assert (
        recuerdo_cli(base, "-m", "shop", "add_rule", "cap", level, "discount <= 0.2").returncode
        == 0
    )
    done = recuerdo_cli(
        base, "-m", "shop", "check_rules", "--context", json.dumps({"discount": discount})
    )
    assert done.returncode == code, done.stdout + done.stderr
    if discount > 0.2:
        assert "cap" in done.stdout  # the violation is printed before the exit


def test_the_cli_runs_verbs_on_the_running_server(
    served: Server, base: Path, tmp_path: Path
) -> None:
    """While `serve` runs, its marker names it; a CLI whose state dir holds that marker answers
    from the server's memory. Proof that the server answered: the CLI's own state dir holds
    the marker only (a copy), no memory, and none is created there."""
    marker = base / ".recuerdo" / "state" / "server.json"
    assert json.loads(marker.read_text())["url"] == served.url
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".recuerdo" / "state").mkdir(parents=True)
    (elsewhere / ".recuerdo" / "state" / "server.json").write_text(marker.read_text())
    wrote = recuerdo_cli(elsewhere, "-m", "shop", "remember", "decision", "Ship on Tuesdays")
    assert wrote.returncode == 0, wrote.stderr
    found = recuerdo_cli(elsewhere, "-m", "shop", "--json", "recall")
    assert found.returncode == 0, found.stderr
    assert {e["content"] for e in json.loads(found.stdout)} == {
        "API is slow on Mondays",
        "Ship on Tuesdays",
    }
    assert not list((elsewhere / ".recuerdo" / "state").glob("*.db"))
    served.process.send_signal(signal.SIGTERM)  # as Server.stop does, with time to finish
    served.process.wait(timeout=300)
    assert not marker.exists()  # removed on exit


def test_the_host_ceiling_holds_through_a_running_server(served: Server, base: Path) -> None:
    """RECUERDO_CAPS limits a CLI process going through a server as it does locally."""
    done = recuerdo_cli(base, "-m", "shop", "recall", env={"RECUERDO_CAPS": "memory=other-*"})
    assert done.returncode == 1 and "capability_not_granted" in done.stderr


def test_a_stale_marker_is_ignored_and_removed(base: Path) -> None:
    """A marker left by a server killed with -9 (its process gone) is not used."""
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "local")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    marker = base / ".recuerdo" / "state" / "server.json"
    marker.write_text(
        json.dumps({"url": "http://127.0.0.1:9", "pid": dead.pid, "single_user": True})
    )
    done = recuerdo_cli(base, "-m", "shop", "--json", "recall")
    assert done.returncode == 0, done.stderr
    assert [e["content"] for e in json.loads(done.stdout)] == ["local"]
    assert not marker.exists()


def test_a_marker_naming_another_host_is_never_used(base: Path) -> None:
    """Only a loopback server is trusted: a marker naming another host is ignored."""
    with recuerdo.open("shop", base_dir=base) as memory:
        memory.remember("learning", "local")
    marker = base / ".recuerdo" / "state" / "server.json"
    marker.write_text(
        json.dumps({"url": "http://192.0.2.1:7700", "pid": os.getpid(), "single_user": True})
    )
    done = recuerdo_cli(base, "-m", "shop", "--json", "recall")
    assert done.returncode == 0, done.stderr
    assert [e["content"] for e in json.loads(done.stdout)] == ["local"]


@pytest.mark.parametrize("mask", [0o022, 0o000], ids=["umask 022", "umask 000"])
def test_a_server_on_a_fresh_state_dir_makes_it_private_without_a_warning(
    tmp_path: Path, mask: int, caplog: pytest.LogCaptureFixture
) -> None:
    """`serve` leaves its marker before any memory is opened: the folders it makes for it are
    0700 (with the .gitignore) at once, so the first open finds nothing loose to warn about
    (it said `.recuerdo was mode 755, readable by others` on every first start)."""
    from recuerdo.doors import running

    previous = os.umask(mask)
    try:
        with running.announced(str(tmp_path), "http://127.0.0.1:9", single_user=True):
            modes = {
                name: oct((tmp_path / name).stat().st_mode & 0o777)
                for name in (".recuerdo", ".recuerdo/state")
            }
            with caplog.at_level("WARNING"), recuerdo.open("shop", base_dir=tmp_path):
                pass
    finally:
        os.umask(previous)
    assert modes == {".recuerdo": "0o700", ".recuerdo/state": "0o700"}
    assert (tmp_path / ".recuerdo" / ".gitignore").exists()
    assert "readable by others" not in caplog.text


@pytest.mark.parametrize("memory", ["shop", None], ids=["--memory shop", "no --memory"])
def test_the_banner_says_where_the_lens_is_and_what_NAME_stands_for(
    tmp_path: Path, memory: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The banner named the API and MCP but not the lens (`/`), which the README sends a
    newcomer to; started without --memory, its configurations say NAME, to be replaced (pasted
    as printed, the first write made a memory called NAME)."""
    from types import SimpleNamespace

    from recuerdo.doors.commands import _announce

    state = SimpleNamespace(memory_name=memory, state_dir=str(tmp_path))
    _announce("127.0.0.1", 7700, state, "native", False)
    out = capsys.readouterr().out
    assert "  Lens      http://127.0.0.1:7700/  (every memory" in out, out
    assert ("replace NAME" in out) == (memory is None), out
