"""Attack 8: one error shape everywhere.

Every route (``/v1/<verb>`` for every verb in ``/openapi.json``, the semurg ``/v1/memory/*``
routes, ``/mcp``) gets bytes a polite client never sends: a header that is not UTF-8, a body
that is not UTF-8, JSON nested 1,000 deep, a 100,000-digit number, an oversized body (with and
without Content-Length), the wrong method. Lone surrogates go into every string field, ``true``
into every id. Every refusal is JSON ``{ok: false, error, detail}`` with its status and code;
schemathesis then sends negative data to every operation: no 5xx, every 4xx in the shape.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from recuerdo.doors.profiles import profile
from recuerdo.verbs import VERBS

from ..test_http import CALLS
from .conftest import AttackServer, Reply, shape_problem, snapshot

ROUTES = (
    [f"/v1/{name}" for name in VERBS.names()]
    + [f"/v1/memory/{tool.http_path}" for tool in profile("semurg") if tool.http_path]
    + ["/mcp"]
)
OVERSIZED = 8 * 1024 * 1024 + 4096
SURROGATE = "@@surrogate@@"  # replaced by a raw \ud800 escape in the JSON text

# (case, body bytes, extra headers, method, chunked, status, code)
Case = tuple[str, bytes | None, list[tuple[str | bytes, str | bytes]], str, bool, int, str]
ROUTE_CASES: list[Case] = [
    ("header not UTF-8", b"{}", [("X-Note", b"caf\xe9 \xff\xfe")], "POST", False, 400,
     "invalid_header"),
    ("body not UTF-8", b'{"query": "\xff\xfe\xc3"}', [], "POST", False, 400, "invalid_json"),
    ("JSON 1000 deep", b"[" * 1000 + b"]" * 1000, [], "POST", False, 400, "invalid_json"),
    ("100000-digit integer", b'{"id": ' + b"7" * 100_000 + b"}", [], "POST", False, 400,
     "invalid_json"),
    # The length alone is refused: the body never needs to come.
    ("oversized with length", b"", [("Content-Length", str(OVERSIZED))], "POST", False, 413,
     "payload_too_large"),
    ("oversized chunked", b"[" + b"0," * (OVERSIZED // 2) + b"0]", [], "POST", True, 413,
     "payload_too_large"),
    ("wrong method", None, [], "GET", False, 405, "method_not_allowed"),
]  # fmt: skip
UNKNOWN_ROUTES = [
    "/v1/nope",
    "/v1/",
    "/v2/remember",
    "/v1/memory/nope",
    "/lens/nope",  # "/" is the memory lens's first page now (POST there: 405)
    "/v1/remember/extra",
    "/mcp/extra",
    "/v1/Remember",
]
JSON_HEADERS: list[tuple[str | bytes, str | bytes]] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),  # what /mcp wants before anything else
]


def _string_fields(schema: dict[str, Any]) -> list[tuple[str, bool]]:
    """Top-level fields that take text: (name, whether it is a list of text)."""
    found = []
    for name, spec in schema.get("properties", {}).items():
        text = json.dumps(spec)
        if '"items": {"type": "string"}' in text:
            found.append((name, True))
        elif '"type": "string"' in text:
            found.append((name, False))
    return found


def _surrogate_cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(case id, route, body with SURROGATE where the lone surrogate goes)."""
    cases = []
    bodies = dict(CALLS)
    for verb in VERBS:
        base: dict[str, Any] = bodies[verb.name]
        for name, is_list in _string_fields(verb.params.model_json_schema(by_alias=True)):
            body = {**base, name: [SURROGATE] if is_list else SURROGATE}
            cases.append((f"{verb.name}.{name}", f"/v1/{verb.name}", body))
    semurg_bases = {
        "recall": {"subject": "Ann"},
        "context": {"query": "tasks"},
        "relate": {"from": "Ann", "to": "Bob", "type": "knows"},
        "document": {"content_base64": "SGVsbG8="},
        "import": {"records": []},
    }
    for tool in profile("semurg"):
        base = semurg_bases.get(str(tool.http_path), {})
        for name, is_list in _string_fields(tool.schema):
            body = {**base, name: [SURROGATE] if is_list else SURROGATE}
            cases.append((f"memory/{tool.http_path}.{name}", f"/v1/memory/{tool.http_path}", body))
    nested: list[tuple[str, str, dict[str, Any]]] = [
        ("remember_many.entries[].content", "/v1/remember_many",
         {"entries": [{"category": "learning", "content": SURROGATE}]}),
        ("remember_many.entries[].tags[]", "/v1/remember_many",
         {"entries": [{"category": "learning", "content": "x", "tags": [SURROGATE]}]}),
        ("add_messages.messages[].text", "/v1/add_messages",
         {"conversation": "c9", "messages": [{"speaker": "Ann", "text": SURROGATE}]}),
        ("add_messages.messages[].speaker", "/v1/add_messages",
         {"conversation": "c9", "messages": [{"speaker": SURROGATE, "text": "hi"}]}),
        ("remember_knowledge.facts.entities[].name", "/v1/remember_knowledge",
         {"content": "Ann met Bob.", "facts": {"entities": [{"name": SURROGATE}]}}),
        ("remember_knowledge.facts.relations[].type", "/v1/remember_knowledge",
         {"content": "Ann met Bob.",
          "facts": {"relations": [{"source": "Ann", "target": "Bob", "type": SURROGATE}]}}),
        ("remember_knowledge.passages[].text", "/v1/remember_knowledge",
         {"passages": [{"text": SURROGATE}]}),
        ("relate.attributes value", "/v1/relate",
         {"from": "Ann", "to": "Bob", "type": "knows", "attributes": {"note": SURROGATE}}),
        ("check_rules.context value", "/v1/check_rules", {"context": {"discount": SURROGATE}}),
        ("import.records[].name", "/v1/import",
         {"records": [{"record": "entity", "key": "k-s", "name": SURROGATE}], "scope": "copy"}),
        ("remember object key", "/v1/remember",
         {"category": "learning", "content": "x", "tags": ["t"], "scope": "s", SURROGATE: 1}),
    ]  # fmt: skip
    return cases + nested


SURROGATE_CASES = _surrogate_cases()
ID_VERBS = [
    (verb.name, name)
    for verb in VERBS
    for name, info in verb.params.model_fields.items()
    if name in ("id", "from_id", "to_id") and "int" in str(info.annotation)
]


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Fuzzed:
    routes: list[str] = field(default_factory=list)
    by_route: dict[str, Reply] = field(default_factory=dict)
    unknown: dict[str, Reply] = field(default_factory=dict)
    surrogates: dict[str, Reply] = field(default_factory=dict)
    ids: dict[str, Reply] = field(default_factory=dict)
    before: list[Any] = field(default_factory=list)
    after: list[Any] = field(default_factory=list)
    operations: set[str] = field(default_factory=set)
    negative: list[str] = field(default_factory=list)  # schemathesis: what broke the contract


def _route_request(server: AttackServer, route: str, case: Case) -> Reply:
    _, body, headers, method, chunked, _, _ = case
    if route == "/mcp" and method == "GET":
        method = "PUT"  # GET is a method of the MCP transport; PUT is no one's
    return server.send(method, f"{route}?memory=m", body, [*JSON_HEADERS, *headers],
                       chunked=chunked)  # fmt: skip


def _json_body(body: dict[str, Any]) -> bytes:
    return json.dumps(body).replace(f'"{SURROGATE}"', '"\\ud800x"').encode()


@pytest.fixture(scope="module")
def server(semurg_server: AttackServer) -> AttackServer:
    return semurg_server


@pytest.fixture(scope="module")
def fuzzed(server: AttackServer) -> Fuzzed:
    """Memory m holding one of everything; every hostile request sent (four at a time); what
    the memory holds compared before and after."""
    for verb, body in CALLS:
        if not verb.startswith("code_"):  # the code verbs need a served repository
            server.ok(verb, body)
    seen = Fuzzed()
    spec = json.loads(server.send("GET", "/openapi.json").body)
    seen.routes = sorted(
        [path for path, item in spec["paths"].items() if "post" in item] + ["/mcp"]
    )
    seen.before = snapshot(server, scopes=("user", "copy"))
    jobs: dict[tuple[str, str], Callable[[], Reply]] = {}
    for route in ROUTES:
        for case in ROUTE_CASES:
            jobs[("route", f"{route} {case[0]}")] = partial(_route_request, server, route, case)
    for route in UNKNOWN_ROUTES:
        jobs[("unknown", route)] = partial(
            server.send, "POST", f"{route}?memory=m", b"{}", JSON_HEADERS
        )
    for case_id, route, surrogate in SURROGATE_CASES:
        jobs[("surrogate", case_id)] = partial(
            server.send, "POST", f"{route}?memory=m", _json_body(surrogate), JSON_HEADERS
        )
    bodies = dict(CALLS)
    for verb, name in ID_VERBS:
        for value in (True, False):
            raw = json.dumps({**bodies[verb], name: value}).encode()
            jobs[("id", f"{verb}.{name}={value}")] = partial(
                server.send, "POST", f"/v1/{verb}?memory=m", raw, JSON_HEADERS
            )
    # Schemathesis generates its cases here while the server answers the table: two cores.
    negative = threading.Thread(target=_schemathesis, args=(server, seen))
    negative.start()
    with ThreadPoolExecutor(4) as pool:
        replies = dict(zip(jobs, pool.map(lambda job: job(), jobs.values()), strict=True))
    negative.join()
    targets = {
        "route": seen.by_route,
        "unknown": seen.unknown,
        "surrogate": seen.surrogates,
        "id": seen.ids,
    }
    for (kind, key), reply in replies.items():
        targets[kind][key] = reply
    try:
        seen.after = snapshot(server, scopes=("user", "copy"))
    except AssertionError as error:  # a half-stored value can break the reads themselves
        seen.after = [f"reading the memory back failed: {error}"]
    return seen


def test_the_table_covers_every_route(fuzzed: Fuzzed) -> None:
    """The routes fuzzed here are exactly the POST routes /openapi.json lists, plus /mcp."""
    assert sorted(ROUTES) == fuzzed.routes


def _wrong(replies: dict[str, Reply], status: int, code: str) -> str:
    """One line per reply that is not exactly that refusal (empty when all are)."""
    found = [(key, shape_problem(reply, status, code)) for key, reply in replies.items()]
    wrong = [f"{key}: {problem}" for key, problem in found if problem]
    return f"{len(wrong)} of {len(replies)} wrong:\n" + "\n".join(wrong) if wrong else ""


@pytest.mark.parametrize("case", ROUTE_CASES, ids=[c[0] for c in ROUTE_CASES])
def test_hostile_bytes_get_the_error_shape(fuzzed: Fuzzed, case: Case) -> None:
    """One hostile request to every route: its status and code, JSON {ok: false, error,
    detail} (never 500, never text/plain, never a bare {"detail": ...})."""
    name, *_, status, code = case
    replies = {route: fuzzed.by_route[f"{route} {name}"] for route in ROUTES}
    wrong = _wrong(replies, status, code)
    assert not wrong, wrong


def test_unknown_routes_are_404_unknown_route(fuzzed: Fuzzed) -> None:
    """Routes that do not exist: 404 unknown_route in the shape."""
    wrong = _wrong(fuzzed.unknown, 404, "unknown_route")
    assert not wrong, wrong


SURROGATE_ROUTES = sorted({route for _, route, _ in SURROGATE_CASES})


@pytest.mark.parametrize("route", SURROGATE_ROUTES)
def test_lone_surrogates_are_invalid_input(fuzzed: Fuzzed, route: str) -> None:
    """A lone surrogate (written raw in the JSON) in any string field of the route, nested or
    a key: 400 invalid_input, whatever the verb would have said about the value otherwise."""
    replies = {case: fuzzed.surrogates[case] for case, r, _ in SURROGATE_CASES if r == route}
    wrong = _wrong(replies, 400, "invalid_input")
    assert not wrong, wrong


def test_a_boolean_is_never_an_id(fuzzed: Fuzzed) -> None:
    """{"id": true} is not id 1 (nor false id 0), in any verb taking an id: 400
    invalid_input."""
    wrong = _wrong(fuzzed.ids, 400, "invalid_input")
    assert not wrong, wrong


def test_no_hostile_request_changed_the_memory(fuzzed: Fuzzed) -> None:
    """After every refusal above, the memory holds exactly what it held before (a boolean id
    did not forget entry 1, a surrogate did not half-store a record)."""
    assert fuzzed.after == fuzzed.before


def _shape_problem(response: Any) -> str | None:
    """Why an answer breaks the contract (a 5xx, or a 4xx not in the shape), or None."""
    status = response.status_code
    if status >= 500:
        return f"{status}"
    if status < 400:
        return None
    media = response.headers.get("content-type") or [""]
    media = media[0] if isinstance(media, list) else media
    if media.split(";")[0].strip() != "application/json":
        return f"{status} {media}"
    try:
        shape = json.loads(response.content)
    except ValueError:
        return f"{status} not JSON"
    if not (
        isinstance(shape, dict)
        and shape.get("ok") is False
        and isinstance(shape.get("error"), str)
        and isinstance(shape.get("detail"), str)
    ):
        return f"{status} {str(shape)[:120]}"
    return None


def _negative(operation: Any, failures: list[str]) -> Callable[[], None]:
    """A hypothesis test sending a few negative examples to one operation."""
    from hypothesis import HealthCheck, given, settings
    from schemathesis.generation import GenerationMode

    @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    @settings(
        max_examples=3,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        response = case.call(timeout=30)
        problem = _shape_problem(response)
        if problem:
            failures.append(f"{operation.label}: {problem} <- {case.body!r:.200}")

    return check


def _schemathesis(server: AttackServer, seen: Fuzzed) -> None:
    """Negative examples for every operation of /openapi.json; what breaks the contract is
    kept in ``seen.negative`` (an error of the run itself, too)."""
    import schemathesis
    from hypothesis.errors import Unsatisfiable

    try:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        seen.operations = {operation.label for operation in operations}
        for operation in operations:
            with contextlib.suppress(Unsatisfiable):  # no negative example for this schema
                _negative(operation, seen.negative)()
    except Exception as error:  # reported by the test, not lost in a thread
        seen.negative.append(f"the schemathesis run failed: {error!r}")


def test_schemathesis_negative_data(fuzzed: Fuzzed) -> None:
    """Schemathesis sends data that breaks each operation's schema (wrong types, missing
    fields, extra fields) to every operation: never a 5xx, and every 4xx is the error shape.
    (It runs beside the fuzz table above, on the default memory.)"""
    assert {f"POST {route}" for route in ROUTES if route != "/mcp"} <= fuzzed.operations
    assert fuzzed.negative == [], "\n".join(sorted(set(fuzzed.negative))[:40])
