"""Attack 1: reading the server's files through ``ingest``.

Remote doors (HTTP, MCP over HTTP) never read a server-side path: a path is refused with
``path_not_allowed`` (403) and nothing is stored. ``serve --ingest-root DIR`` allows real paths
inside DIR only. The CLI talking to a server sends the file's bytes.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import AttackServer, Launcher, assert_error, cli, mcp_call, snapshot, tokens_at_once

MARK_SECRET = "Yxqoperthfile"  # in the file that holds tenant acme's token
MARK_INSIDE = "Wizzlequarinside"  # in a file inside the ingest root
MARK_OUTSIDE = "Vombratoutside"  # in a file outside it


@dataclass
class Tenants:
    server: AttackServer
    acme: str
    globex: str
    secret_file: Path


@dataclass
class Rooted:
    server: AttackServer
    root: Path
    inside: Path
    outside: Path


@pytest.fixture(scope="module")
def servers(launch: Launcher, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tenants, Rooted]:
    """Two servers started at once. One with tokens for two tenants, acme's token sitting in a
    file on the server's disk. One single-user, started with --ingest-root: beside the root,
    files it must not read, and inside it symlinks that point out and a named pipe."""
    base = tmp_path_factory.mktemp("ingest")
    acme, globex = tokens_at_once(
        base,
        ["--principal", "acme-bot", "--tenant", "acme"],
        ["--principal", "globex-bot", "--tenant", "globex"],
    )
    secret_file = tmp_path_factory.mktemp("acme-config") / "acme.env"
    secret_file.write_text(f"# {MARK_SECRET}\nRECUERDO_TOKEN={acme}\n")
    area = tmp_path_factory.mktemp("rooted")
    root = area / "docs"
    (root / "sub").mkdir(parents=True)
    inside = root / "sub" / "inside.md"
    inside.write_text(f"# Inside\n\n{MARK_INSIDE} may be read.\n")
    outside = area / "private" / "outside.md"
    outside.parent.mkdir()
    outside.write_text(f"# Outside\n\n{MARK_OUTSIDE} must never be read.\n")
    twin = area / "docs-evil"  # shares the root's name as a prefix
    twin.mkdir()
    (twin / "evil.md").write_text(f"# Twin\n\n{MARK_OUTSIDE} through a prefix.\n")
    os.symlink(outside, root / "link.md")
    os.symlink(outside.parent, root / "linkdir")
    os.mkfifo(root / "pipe")
    plain, with_root = launch.many(
        {"base": base}, {"base": area / "state", "args": ["--ingest-root", str(root)]}
    )
    return Tenants(plain, acme, globex, secret_file), Rooted(with_root, root, inside, outside)


@pytest.fixture(scope="module")
def tenants(servers: tuple[Tenants, Rooted]) -> Tenants:
    servers[0].server.ready()
    return servers[0]


@pytest.fixture(scope="module")
def rooted(servers: tuple[Tenants, Rooted]) -> Rooted:
    servers[1].server.ready()
    return servers[1]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


REMOTE_PATHS: list[tuple[str, Callable[[Tenants], str]]] = [
    ("another tenant's token file", lambda t: str(t.secret_file)),
    ("/etc/passwd", lambda t: "/etc/passwd"),
    ("a relative escape", lambda t: "../../../../../../../../etc/passwd"),
    ("a file that does not exist", lambda t: str(t.secret_file.parent / "absent.env")),
    ("the server's own token database", lambda t: str(t.server.base / ".recuerdo" / "tokens.db")),
]


@pytest.mark.parametrize(("label", "path_of"), REMOTE_PATHS, ids=[p[0] for p in REMOTE_PATHS])
def test_http_ingest_never_reads_a_server_path(
    tenants: Tenants, label: str, path_of: Callable[[Tenants], str]
) -> None:
    """POST /v1/ingest {"path": ...} from tenant globex: 403 path_not_allowed (whether or not
    the file exists: no oracle), the reply holds nothing of the file, nothing is stored."""
    server, token = tenants.server, tenants.globex
    before = snapshot(server, token=token, queries=[MARK_SECRET, "root"])
    reply = server.call("ingest", {"path": path_of(tenants)}, token=token)
    assert_error(reply, 403, "path_not_allowed")
    assert tenants.acme.encode() not in reply.body and MARK_SECRET.encode() not in reply.body
    assert b"root:x:0:0" not in reply.body
    assert snapshot(server, token=token, queries=[MARK_SECRET, "root"]) == before


def test_mcp_ingest_never_reads_a_server_path(tenants: Tenants) -> None:
    """MCP tools/call ingest {"path": <acme's token file>} with globex's token: an is_error
    result whose structured content is path_not_allowed; the token is not revealed or stored."""
    server, token = tenants.server, tenants.globex
    before = snapshot(server, token=token, queries=[MARK_SECRET])
    failed, content = mcp_call(
        server, "ingest", {"path": str(tenants.secret_file)}, memory="m", token=token
    )
    assert failed is True, content
    assert content["ok"] is False and content["error"] == "path_not_allowed", content
    assert tenants.acme not in repr(content) and MARK_SECRET not in repr(content)
    assert snapshot(server, token=token, queries=[MARK_SECRET]) == before


def test_path_and_bytes_together_are_refused(tenants: Tenants) -> None:
    """A path smuggled beside valid content_base64: refused (path_not_allowed, or
    invalid_input for giving both), the file not read, nothing stored."""
    server, token = tenants.server, tenants.globex
    before = snapshot(server, token=token, queries=[MARK_SECRET])
    body = {"path": str(tenants.secret_file), "content_base64": _b64("# Harmless\n\nText.")}
    reply = server.call("ingest", body, token=token)
    if reply.status == 403:
        assert_error(reply, 403, "path_not_allowed")
    else:
        assert_error(reply, 400, "invalid_input")
    assert tenants.acme.encode() not in reply.body and MARK_SECRET.encode() not in reply.body
    assert snapshot(server, token=token, queries=[MARK_SECRET]) == before


def test_bytes_still_work_over_http_and_mcp(tenants: Tenants) -> None:
    """content_base64 keeps working on both remote doors, confined to the caller's tenant."""
    server, acme, globex = tenants.server, tenants.acme, tenants.globex
    stored = server.ok(
        "ingest",
        {"content_base64": _b64("# Bytes\n\nQuolvenbytes sent by acme."), "name": "b.md"},
        token=acme,
    )
    assert "Quolvenbytes" in stored["text"]
    failed, content = mcp_call(
        server,
        "ingest",
        {"content_base64": _b64("Brazentmcpbytes over mcp."), "name": "m.txt"},
        memory="m",
        token=acme,
    )
    assert failed is False and "Brazentmcpbytes" in content["text"], content
    for word in ("Quolvenbytes", "Brazentmcpbytes"):
        assert server.ok("search", {"query": word}, token=acme)["results"], word
        assert server.ok("search", {"query": word}, token=globex)["results"] == [], word


def test_the_cli_sends_the_bytes_to_the_server(tenants: Tenants, tmp_path: Path) -> None:
    """``recuerdo --server URL --token T --memory m ingest FILE`` reads FILE on the client and
    stores it on the server (not in a local memory): exit 0, the server finds it, nothing is
    written on the client's side."""
    server = tenants.server
    document = tmp_path / "doc" / "client-side.md"
    document.parent.mkdir()
    document.write_text("# Client\n\nFrenquistclient text read on the client.\n")
    work = tmp_path / "work"
    work.mkdir()
    done = cli(
        "--server", server.url, "--token", tenants.acme, "--memory", "m", "--json",
        "ingest", str(document),
        cwd=work, env={"RECUERDO_STATE_DIR": str(work)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = server.ok("search", {"query": "Frenquistclient"}, token=tenants.acme)["results"]
    assert [r["title"] for r in found] == ["client-side.md"], found
    assert list(work.iterdir()) == []


# -- serve --ingest-root DIR ---------------------------------------------------------------------


def test_ingest_root_reads_a_file_inside(rooted: Rooted) -> None:
    """A real file inside --ingest-root is read over HTTP and stored."""
    reply = rooted.server.ok("ingest", {"path": str(rooted.inside)})
    assert MARK_INSIDE in reply["text"]
    assert rooted.server.ok("search", {"query": MARK_INSIDE})["results"]


ESCAPES: list[tuple[str, Callable[[Rooted], str]]] = [
    ("absolute path outside", lambda r: str(r.outside)),
    ("dot-dot escape", lambda r: f"{r.root}/sub/../../private/outside.md"),
    ("symlink inside to a file outside", lambda r: str(r.root / "link.md")),
    ("symlinked folder inside", lambda r: str(r.root / "linkdir" / "outside.md")),
    ("sibling sharing the root's prefix", lambda r: f"{r.root}-evil/evil.md"),
    ("/etc/passwd", lambda r: "/etc/passwd"),
]


@pytest.mark.parametrize(("label", "path_of"), ESCAPES, ids=[e[0] for e in ESCAPES])
def test_ingest_root_refuses_every_way_out(
    rooted: Rooted, label: str, path_of: Callable[[Rooted], str]
) -> None:
    """Outside the root by any route (absolute, ``..``, a symlink or symlinked folder inside,
    a sibling folder whose name starts with the root's): 403 path_not_allowed, nothing stored."""
    server = rooted.server
    before = snapshot(server, queries=[MARK_OUTSIDE, "root"])
    reply = server.call("ingest", {"path": path_of(rooted)})
    assert_error(reply, 403, "path_not_allowed")
    assert MARK_OUTSIDE.encode() not in reply.body and b"root:x:0:0" not in reply.body
    assert snapshot(server, queries=[MARK_OUTSIDE, "root"]) == before


def test_ingest_root_holds_over_mcp_too(rooted: Rooted) -> None:
    """MCP ingest obeys the same root: the symlink out is refused, the file inside is read."""
    server = rooted.server
    before = snapshot(server, queries=[MARK_OUTSIDE])
    failed, content = mcp_call(server, "ingest", {"path": str(rooted.root / "link.md")})
    assert failed is True and content["error"] == "path_not_allowed", content
    assert snapshot(server, queries=[MARK_OUTSIDE]) == before
    failed, content = mcp_call(server, "ingest", {"path": str(rooted.inside)})
    assert failed is False and MARK_INSIDE in content["text"], content


NOT_FILES = [".", "sub", "", "pipe"]


@pytest.mark.parametrize("given", NOT_FILES, ids=["the-root", "a-folder", "empty", "named-pipe"])
def test_ingest_root_reads_regular_files_only(rooted: Rooted, given: str) -> None:
    """A folder inside the root (the root itself too) or a named pipe: 400 invalid_input and
    nothing stored (a folder failed as a 500 IsADirectoryError; opening a pipe waited for a
    writer for ever, holding the server's write lane), and the next write is served."""
    server = rooted.server
    before = snapshot(server, queries=[MARK_INSIDE])
    reply = server.call("ingest", {"path": given})
    assert_error(reply, 400, "invalid_input")
    assert snapshot(server, queries=[MARK_INSIDE]) == before
    server.ok("remember", {"category": "learning", "content": f"Written after {given!r}."})
