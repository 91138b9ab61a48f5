"""What the command line answers when it refuses: with ``--json``, one JSON error shape on
stdout with a stable code and a non-zero exit; without it, a line on stderr; never a Python
traceback, and nothing written."""

from __future__ import annotations

import errno
import gzip
import http.server
import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recuerdo.doors.cli import cli

from .conftest import tree


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    state = tmp_path / "state"
    return CliRunner(env={"RECUERDO_STATE_DIR": str(state), "RECUERDO_MEMORY": "refusals"})


def refused(result: Result) -> dict[str, object]:
    """The JSON error shape, checked: printed alone on stdout, by an exit, not an exception."""
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code != 0
    shape = json.loads(result.stdout)
    assert shape["ok"] is False and isinstance(shape["detail"], str)
    assert "Traceback" not in result.output
    return shape


def written(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["save", "Kept", "the one note"]).exit_code == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--json", "get", "abc"], "invalid_input"),  # not an integer
        (["get", "abc", "--json"], "invalid_input"),  # the command's own --json
        (["--json", "get"], "invalid_input"),  # a missing argument
        (["--json", "no_such_verb"], "invalid_input"),
        (["--json", "get", "1", "--bogus"], "unknown_argument"),
        (["--bogus", "--json", "get", "1"], "unknown_argument"),  # a global option
        (["--json", "--memory"], "invalid_input"),  # a global option without its value
        (["--json", "--state-dir", "a-file", "recall"], "invalid_input"),  # a global's bad value
        (["--json", "recent", "--max-bytes", "many"], "invalid_input"),
        (["--json", "mirror", "pull", "never-synced.md"], "invalid_input"),  # a UsageError
    ],
)
def test_usage_errors_under_json_are_the_json_error_shape(
    runner: CliRunner, tmp_path: Path, args: list[str], code: str
) -> None:
    written(runner)
    (tmp_path / "a-file").write_text("not a folder")
    args = [str(tmp_path / arg) if arg == "a-file" else arg for arg in args]
    before = tree(tmp_path)
    result = runner.invoke(cli, args)
    shape = refused(result)
    assert shape["error"] == code
    assert result.exit_code == 2  # a usage error's exit, as without --json
    assert tree(tmp_path) == before


def test_usage_errors_without_json_stay_click_text(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["get", "abc"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Invalid value for 'ID'" in result.stderr


def test_a_json_word_after_the_separator_is_a_value(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["get", "--", "--json"])
    assert result.exit_code == 2 and result.stdout == ""


def test_backup_into_a_missing_folder_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    written(runner)
    before = tree(tmp_path)
    for raw in ([], ["--raw"]):
        target = tmp_path / "missing" / "out.gz"
        shape = refused(runner.invoke(cli, ["--json", "backup", *raw, str(target)]))
        assert shape["error"] == "invalid_input"
        assert "missing" in str(shape["detail"]) and ".partial" not in str(shape["detail"])
        assert tree(tmp_path) == before
    text = runner.invoke(cli, ["backup", str(tmp_path / "missing" / "out.gz")])
    assert text.exit_code == 1 and text.stderr.startswith("error: invalid_input: ")


def _archives(tmp_path: Path) -> dict[str, Path]:
    whole = tmp_path / "whole.gz"
    CliRunner(env={"RECUERDO_STATE_DIR": str(tmp_path / "other")}).invoke(
        cli, ["-m", "src", "save", "T", "x"]
    )
    CliRunner(env={"RECUERDO_STATE_DIR": str(tmp_path / "other")}).invoke(
        cli, ["-m", "src", "backup", str(whole)]
    )
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole.read_bytes()[:60])
    text = tmp_path / "text.gz"
    text.write_text("#!/bin/sh\n")
    garbage = tmp_path / "garbage.gz"
    garbage.write_bytes(gzip.compress(b"garbage"))
    return {"cut": cut, "text": text, "garbage": garbage, "missing": tmp_path / "none.gz"}


@pytest.mark.parametrize("kind", ["cut", "text", "garbage", "missing"])
def test_restore_of_what_is_not_a_backup_is_refused(
    runner: CliRunner, tmp_path: Path, kind: str
) -> None:
    archive = _archives(tmp_path)[kind]
    before = tree(tmp_path)
    shape = refused(runner.invoke(cli, ["-m", "fresh", "--json", "restore", str(archive)]))
    assert shape["error"] == "invalid_input"
    assert tree(tmp_path) == before  # no memory "fresh", no leftover


def test_a_file_a_command_cannot_write_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    written(runner)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    before = tree(tmp_path)
    shape = refused(runner.invoke(cli, ["--json", "export-markdown", str(blocker / "notes")]))
    assert shape["error"] == "invalid_input" and "Not a directory" in str(shape["detail"])
    assert tree(tmp_path) == before
    text = runner.invoke(cli, ["export-markdown", str(blocker / "notes")])
    assert text.exit_code == 1 and text.stderr.startswith("error: invalid_input: ")
    assert isinstance(text.exception, SystemExit)


def test_mirror_pull_into_a_missing_folder_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    document = tmp_path / "tasks.md"
    document.write_text("# Tasks\n- one\n")
    assert runner.invoke(cli, ["mirror", "push", str(document), "--key", "odd/x"]).exit_code == 0
    before = tree(tmp_path)
    target = tmp_path / "missing" / "tasks.md"
    shape = refused(runner.invoke(cli, ["--json", "mirror", "pull", str(target), "--key", "odd/x"]))
    assert shape["error"] == "invalid_input" and "missing" in str(shape["detail"])
    assert tree(tmp_path) == before  # the mirror's ledger does not name the file either


@pytest.mark.parametrize(
    "server", ["notaurl", "http://[::1", "http://host:abc", "ftp://host", "http://"]
)
def test_a_server_that_is_not_a_url_is_refused(runner: CliRunner, server: str) -> None:
    shape = refused(runner.invoke(cli, ["--server", server, "--json", "recall"]))
    assert shape["error"] == "invalid_input" and "--server" in str(shape["detail"])


def _recall_through(
    runner: CliRunner, status: int, content_type: str, body: bytes
) -> dict[str, object]:
    """The CLI's JSON refusal of ``recall`` sent to a server that answers every POST with
    ``status`` and ``body``."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer) as other:
        threading.Thread(target=other.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{other.server_address[1]}"
        try:
            return refused(runner.invoke(cli, ["--server", url, "--json", "recall"]))
        finally:
            other.shutdown()


def test_a_server_that_answers_something_else_is_unavailable(runner: CliRunner) -> None:
    shape = _recall_through(runner, 200, "text/html", b"<html>a router's login page</html>")
    assert shape["error"] == "store_unavailable" and "did not answer JSON" in str(shape["detail"])


@pytest.mark.parametrize("body", [b'["bad gateway"]', b'"bad gateway"', b"502", b"null"])
def test_a_server_error_that_is_not_the_error_shape_is_an_error(
    runner: CliRunner, body: bytes
) -> None:
    """A proxy's error page may be JSON that is not an object: it was an AttributeError."""
    shape = _recall_through(runner, 502, "application/json", body)
    assert shape["error"] == "internal" and shape["detail"] == "HTTP 502"


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (["add_messages", "c", "--messages", "-"], "[" * 50_000 + "]" * 50_000, "nested"),
        (["check_rules", "pricing", "--context", "-"], '{"n": ' + "9" * 5000 + "}", "digits"),
        (
            ["remember_knowledge", "--passages", "-", "--facts", "-"],
            '[{"text": "Ana works at Acme", "mentions": ["Ana"]}]',
            "--passages reads standard input already",
        ),
        (["context_set", "s", "not json"], "", "IDS must be JSON"),
    ],
)
def test_json_arguments_that_cannot_be_read_are_refused(
    runner: CliRunner, tmp_path: Path, args: list[str], stdin: str, says: str
) -> None:
    written(runner)
    before = tree(tmp_path)
    shape = refused(runner.invoke(cli, ["--json", *args], input=stdin))
    assert shape["error"] == "invalid_input" and says in str(shape["detail"])
    assert tree(tmp_path) == before
    notes = json.loads(runner.invoke(cli, ["--json", "list_notes"]).stdout)["notes"]
    assert [note["title"] for note in notes] == ["Kept"]


def test_json_fractions_keep_their_digits(runner: CliRunner) -> None:
    """As over HTTP (test_http.test_fractions_keep_their_digits_over_http): a float lost them."""
    facts = {"entities": [{"name": "Acme", "attributes": {"revenue": 0, "margin": 0}}]}
    text = json.dumps(facts).replace('"revenue": 0', '"revenue": 12345678901234567.89')
    text = text.replace('"margin": 0', '"margin": 0.25')
    args = ["remember_knowledge", "--facts", "-", "--scope", "dec"]
    stored = runner.invoke(cli, args, input=text)
    assert stored.exit_code == 0, stored.output
    about = json.loads(runner.invoke(cli, ["--json", "about", "Acme", "--scope", "dec"]).stdout)
    values = about["items"][0]["attributes"]
    assert values["revenue"] == {"type": "decimal", "value": "12345678901234567.89"}
    assert values["margin"] == {"type": "decimal", "value": "0.25"}


def test_a_facts_json_fractions_keep_their_digits(runner: CliRunner) -> None:
    """A fact's attributes are printed with the digits they were given (a float lost them)."""
    attributes = '{"weight": 1.80, "big": 12345678901234567890.123}'
    args = ["relate", "Ann", "Acme", "works_at", "--attributes", attributes, "--scope", "decf"]
    stored = runner.invoke(cli, args)
    assert stored.exit_code == 0, stored.output
    shown = runner.invoke(cli, ["--json", "about", "Ann", "--scope", "decf", "--hops", "1"])
    assert '"big": 12345678901234567890.123' in shown.stdout
    assert '"weight": 1.80' in shown.stdout


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("relate", "relate [OPTIONS] FROM TO TYPE"),
        ("code_diff", "code_diff [OPTIONS] REPO FROM"),
        ("complete_step", "complete_step [OPTIONS] TASK STEP [RESULT]"),
    ],
)
def test_usage_lines_spell_arguments_as_typed(runner: CliRunner, command: str, usage: str) -> None:
    shown = runner.invoke(cli, [command, "--help"])
    assert shown.exit_code == 0 and f"Usage: cli {usage}\n" in shown.stdout
    assert "FROM_" not in shown.stdout


@pytest.mark.parametrize(
    ("number", "code"),
    [
        (errno.ENOSPC, "storage_full"),
        (errno.EDQUOT, "storage_full"),
        (errno.EFBIG, "storage_full"),
        (errno.EIO, "store_unavailable"),
        (errno.EACCES, "invalid_input"),
    ],
    ids=["disk-full", "quota", "file-too-big", "device", "permission"],
)
def test_a_file_error_is_named_by_what_went_wrong(number: int, code: str) -> None:
    """A quota reached or a file past the largest allowed was invalid_input (the caller's
    mistake); it is no room to write, as a full disk is (a review of 0113)."""
    from recuerdo.doors.cli import _file_error

    refusal = _file_error(OSError(number, os.strerror(number), "/some/path"))
    assert refusal.code == code and "/some/path" in refusal.detail
