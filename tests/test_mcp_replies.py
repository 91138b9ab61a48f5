"""A tool's reply as it goes over the wire from ``/mcp``, read as raw JSON-RPC rather than
through a client's models: the one text content holding the reply's JSON, the structured
content that is the same JSON read back (a list wrapped as ``{result}``, a cut list's ``more``
beside it), ``isError``, and a refusal's one error shape; in a protocol version of the
handshake era and in the per-request era (2026-07-28: ``resultType`` and the server's
``_meta`` besides)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LEGACY, MODERN = "2025-11-25", "2026-07-28"


@pytest.fixture(params=[LEGACY, MODERN])
def tool_call(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from recuerdo.doors.http import ServerConfig, create_app, wrap

    version: str = request.param
    config = ServerConfig(base_dir=tmp_path, default_memory="wire")
    with TestClient(wrap(create_app(config), config), base_url="http://127.0.0.1") as client:
        calls = iter(range(1, 1000))

        def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            params: dict[str, Any] = {"name": tool, "arguments": arguments}
            headers = {
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": version,
            }
            if version == MODERN:  # each request carries what the handshake told before
                params["_meta"] = {
                    "io.modelcontextprotocol/protocolVersion": version,
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
                headers |= {"Mcp-Method": "tools/call", "Mcp-Name": tool}
            request = {"jsonrpc": "2.0", "id": next(calls), "method": "tools/call"}
            reply = client.post(
                "/mcp?memory=wire", json={**request, "params": params}, headers=headers
            )
            assert reply.status_code == 200, reply.text
            envelope = reply.json()
            assert set(envelope) == {"jsonrpc", "id", "result"}
            assert envelope["id"] == request["id"]
            result: dict[str, Any] = envelope["result"]
            if version == MODERN:
                assert result.pop("resultType") == "complete"
                server = result.pop("_meta")["io.modelcontextprotocol/serverInfo"]
                assert server["name"] == "recuerdo"
            return result

        yield call


def _text(result: dict[str, Any]) -> str:
    [content] = result["content"]
    assert content == {"type": "text", "text": content["text"]}
    return content["text"]  # type: ignore[no-any-return]


def test_an_object_reply_is_its_json_text_and_the_same_json_structured(tool_call: Any) -> None:
    result = tool_call("save", {"title": "Café", "content": "Crème brûlée on Fridays"})
    assert set(result) == {"content", "structuredContent", "isError"}
    assert result["isError"] is False
    text = _text(result)
    assert result["structuredContent"] == json.loads(text)
    assert result["structuredContent"]["outcome"] == "created"
    # As json.dumps writes it by default, but non-ASCII text as it is.
    assert text == json.dumps(json.loads(text), ensure_ascii=False)
    assert "Café" not in text  # the reply names the note by id
    found = tool_call("search", {"query": "brûlée"})
    assert "Crème brûlée" in _text(found) and "\\u" not in _text(found)
    assert _text(found) == json.dumps(json.loads(_text(found)), ensure_ascii=False)
    assert found["structuredContent"] == json.loads(_text(found))
    assert [hit["id"] for hit in found["structuredContent"]["results"]] == [
        result["structuredContent"]["id"]
    ]


def test_a_list_reply_is_wrapped_and_a_cut_one_says_how_many_more(tool_call: Any) -> None:
    for n in range(3):
        tool_call("remember", {"category": "learning", "content": f"fact number {n}"})
    result = tool_call("recall", {"limit": 2})
    assert set(result) == {"content", "structuredContent", "isError"}
    assert result["isError"] is False
    listed = json.loads(_text(result))
    assert isinstance(listed, list) and len(listed) == 2
    assert result["structuredContent"] == {"result": listed, "more": 1}
    whole = tool_call("recall", {})
    assert whole["structuredContent"] == {"result": json.loads(_text(whole)), "more": 0}


def test_a_scalar_reply_is_wrapped(tool_call: Any) -> None:
    result = tool_call("remember", {"category": "learning", "content": "one fact"})
    assert result["structuredContent"] == {"result": json.loads(_text(result))}
    assert isinstance(result["structuredContent"]["result"], int)


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("get", {"id": 424242}, "item_not_found"),
        ("get", {"id": 1, "colour": "red"}, "unknown_argument"),
        ("search", {"query": 7}, "invalid_input"),
        ("no_such_tool", {}, "unknown_tool"),
        # A refused write: what the unchanged memory below could catch.
        ("remember", {"category": "learning", "content": "x", "colour": "red"}, "unknown_argument"),
    ],
)
def test_a_refusal_is_the_one_error_shape(
    tool_call: Any, tool: str, arguments: dict[str, Any], code: str
) -> None:
    tool_call("remember", {"category": "learning", "content": "kept as it was"})
    before = tool_call("recall", {})["structuredContent"]
    result = tool_call(tool, arguments)
    assert set(result) == {"content", "structuredContent", "isError"}
    assert result["isError"] is True
    shape = result["structuredContent"]
    assert shape["ok"] is False and shape["error"] == code and shape["detail"]
    assert _text(result) == json.dumps(shape, ensure_ascii=False)
    assert tool_call("recall", {})["structuredContent"] == before  # the memory is unchanged
