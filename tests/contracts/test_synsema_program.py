"""Synsema's promises about a whole program (../shared/spec/synsema.md): the seed's acceptance
example, what its environment and the files beside it say, and "never truncate silently"
through every door (the CLI, and the native HTTP and MCP doors of a real ``recuerdo serve``).
See test_synsema.py for the functions themselves."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import recuerdo

from ..conftest import Server
from ..forks import recuerdo_command
from .conftest import (
    Http,
    Mcp,
    Servers,
    Tools,
    rows,
    run_program,
)


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("native")


ACCEPTANCE = """
import json
from recuerdo.profiles.synsema import (
    add_rule, check_rules, complete_step, create_progress, recall, remember, require_memory,
    resume_point,
)
require_memory("shop_bot")
remember("learning", "API is slow on Mondays", ["api"])
remember("decision", "Ship on Tuesdays", ["release"])
create_progress("import", ["ingest", "validate", "load"])
complete_step("import", "ingest")
add_rule("max_discount", "must", "discount <= 0.20", "pricing")
print(json.dumps({
    "newest_first": [e["content"] for e in recall()],
    "limit_1": [e["content"] for e in recall(limit=1)],
    "from_main": len(recall(**{"from": "main"})),
    "from_nobody": recall(**{"from": "nobody"}),
    "resume": resume_point("import"),
    "violations": [v["rule"] for v in check_rules("pricing", {"discount": 0.25})],
}))
"""


def test_Y36_the_seeds_acceptance_example(tmp_path: Path) -> None:
    """Y36 the seed's own test block: remember then recall newest first; limit=1 caps; from
    "main" sees top-level writes, "nobody" none; resume point `validate`; a must-rule
    `discount <= 0.20` flags {"discount": 0.25}."""
    out = run_program(tmp_path, ACCEPTANCE)
    assert out == {
        "newest_first": ["Ship on Tuesdays", "API is slow on Mondays"],
        "limit_1": ["Ship on Tuesdays"],
        "from_main": 2,
        "from_nobody": [],
        "resume": "validate",
        "violations": ["max_discount"],
    }


WATCHED = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from recuerdo.profiles.synsema import recall, remember, require_memory
    require_memory("shop_bot")
    remember("learning", "x")
    recall()
print(json.dumps([[w.category.__name__, str(w.message)] for w in caught]))
"""


def test_Y37_the_old_state_name_variable_is_deprecated(tmp_path: Path) -> None:
    """Y37 a SYNSEMA_STATE_NAME variable in the environment gives a DeprecationWarning (the
    declared name is the identity now)."""
    warned = run_program(tmp_path, WATCHED, env={"SYNSEMA_STATE_NAME": "legacy"})
    assert any(
        kind == "DeprecationWarning" and "SYNSEMA_STATE_NAME" in message for kind, message in warned
    ), warned
    assert run_program(tmp_path, WATCHED) == []


def test_Y38_an_old_synsema_state_file_is_pointed_out(tmp_path: Path) -> None:
    """Y38 an existing .synsema/state/<stem>.db beside the program gives a warning naming that
    file (its state is not read: it has to be upgraded)."""
    old = tmp_path / ".synsema" / "state" / "shop_bot.db"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"")
    warned = run_program(tmp_path, WATCHED)
    where = os.path.join(".synsema", "state", "shop_bot.db")
    assert any(where in message for _, message in warned), warned


# -- never truncate silently -------------------------------------------------------------------


def _three_entries(base: Path, name: str) -> None:
    with recuerdo.open(name, base_dir=base) as memory:
        for i in range(3):
            memory.remember("learning", f"entry {i}")


def test_Y39_the_cli_says_how_many_more_exist(tmp_path: Path) -> None:
    """Y39 more entries than `limit`: `recuerdo recall --limit 1` says how many more exist."""
    _three_entries(tmp_path, "m")
    command = recuerdo_command("--state-dir", str(tmp_path), "--memory", "m")
    done = subprocess.run(
        [*command, "recall", "--limit", "1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "entry 2" in done.stdout and "entry 1" not in done.stdout
    assert re.search(r"\b2\b.*\bmore\b|\bmore\b.*\b2\b", done.stderr), done.stderr
    whole = subprocess.run(
        [*command, "recall", "--limit", "10"], capture_output=True, text=True, timeout=120
    )
    assert "more" not in whole.stderr


def _three_posted(http: Http) -> None:
    for i in range(3):
        http.native("remember", {"category": "learning", "content": f"entry {i}"})


def test_Y40_the_http_door_says_how_many_more_exist(http: Http) -> None:
    """Y40 more entries than `limit`: POST /v1/recall answers header X-Recuerdo-More: N."""
    _three_posted(http)
    cut = http.post("/v1/recall", {"limit": 1})
    assert cut.status == 200 and [e["content"] for e in cut.body] == ["entry 2"]
    assert cut.headers.get("x-recuerdo-more") == "2", cut.headers
    whole = http.post("/v1/recall", {"limit": 10})
    assert whole.headers.get("x-recuerdo-more", "0") == "0"


def test_Y41_the_mcp_recall_tool_says_how_many_more_exist(mcp: Mcp, http: Http) -> None:
    """Y41 more entries than `limit`: the MCP recall tool's result carries `more: N`."""
    _three_posted(http)

    async def scenario(tools: Tools) -> None:
        cut = await tools.ok("recall", {"limit": 1})
        assert [e["content"] for e in rows(cut)] == ["entry 2"]
        assert cut.get("more") == 2, cut
        whole = await tools.ok("recall", {"limit": 10})
        assert whole.get("more", 0) == 0

    mcp(scenario)
