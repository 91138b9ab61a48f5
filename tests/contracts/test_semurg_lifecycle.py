"""Semurg's promises (../shared/spec/semurg.md), second part: forgetting, export and import,
status, documents, refusals by name and the doors themselves, kept by ``--profile semurg``
(memory_* MCP tools and ``POST /v1/memory/<verb>``; see test_semurg.py for the first part)."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ..conftest import Server
from .conftest import (
    Http,
    Json,
    Mcp,
    Seen,
    Servers,
    Tools,
    check_output_schemas,
    check_route_schemas,
    find_key,
    names_argument,
    report,
    run_async,
    stdio_tools,
)
from .semurg_doors import SCOPE, VERBS, Door, Via, entities, facts, passages, priya


@pytest.fixture(scope="module")
def server(servers: Servers) -> Server:
    return servers.get("semurg")


@pytest.fixture(params=["http", "mcp"])
def door(request: pytest.FixtureRequest, http: Http, mcp: Mcp) -> Door:
    return Door(request.param, http, mcp)


@pytest.fixture
def api(http: Http, mcp: Mcp) -> Door:
    return Door("http", http, mcp)


async def everything(via: Via, scope: str = SCOPE) -> list[Json]:
    """Every exported record of a scope but the header: what the scope holds."""
    page = await via.ok("export", {"scope": scope, "limit": 1024})
    return [record for record in page["records"] if record["record"] != "export"]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- forget ------------------------------------------------------------------------------------


def test_S37_forgetting_a_subject_removes_it_everywhere(door: Door) -> None:
    """S37 forget `subject`: the entity, its type memberships, every fact at either end and every
    passage linked to it go; the reply counts passages_hidden and names documents_retained."""

    async def scenario(via: Via) -> None:
        await priya(via)
        await via.ok("relate", {"from": "Omar", "to": "Priya Raman", "type": "mentors"})
        gone = await via.ok("forget", {"subject": "Priya Raman"})
        assert gone["already_forgotten"] is False and gone["passages_hidden"] == 1
        assert isinstance(gone["documents_retained"], list)
        assert (await via.ok("recall", {"subject": "Priya"}))["state"] == "nothing_stored"
        assert facts(await via.ok("recall", {"subject": "Omar"})) == []
        assert "Priya Raman" not in entities(await via.ok("recall", {"subject": "which persons"}))
        about = json.dumps(await via.ok("context", {"query": "billing team Acme"}))
        assert "Priya" not in about

    door(scenario)


def test_S38_passages_retained_counts_unlinked_mentions(door: Door) -> None:
    """S38 forgetting a subject counts passages_retained: live passages still containing a word
    of the name that were never linked to it (they stay until forgotten by passage or source)."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        unlinked = [{"text": "Raman sent the audit report to Omar.", "mentions": ["Omar"]}]
        await via.ok("remember", {"passages": unlinked})
        gone = await via.ok("forget", {"subject": "Priya Raman"})
        assert gone["passages_retained"] == 1, gone
        still = passages(await via.ok("recall", {"subject": "Omar"}))
        assert [p["text"] for p in still] == ["Raman sent the audit report to Omar."]

    door(scenario)


def test_S39_forgetting_a_fact_keeps_both_entities(api: Door) -> None:
    """S39 forget `fact` {from, to, type}: just that fact; both entities stay."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        fact = {"from": "Priya Raman", "to": "Acme Corp", "type": "works_at"}
        assert (await via.ok("forget", {"fact": fact}))["already_forgotten"] is False
        assert facts(await via.ok("recall", {"subject": "Priya"})) == []
        assert entities(await via.ok("recall", {"subject": "Acme Corp"})) == ["Acme Corp"]
        assert "Priya Raman" in entities(await via.ok("recall", {"subject": "Priya"}))

    api(scenario)


def test_S40_forgetting_a_passage_removes_its_whole_document(api: Door) -> None:
    """S40 forget `passage` (a doc id): that stored document whole; the facts and entities it
    named stay."""

    async def scenario(via: Via) -> None:
        stored = await priya(via, moved=False)
        await via.ok("forget", {"passage": str(stored["doc_id"])})
        about = await via.ok("recall", {"subject": "Priya"})
        assert passages(about) == [] and len(facts(about)) == 1
        assert await via.records("document") == []

    api(scenario)


def test_S41_forgetting_a_source_keeps_its_facts(api: Door) -> None:
    """S41 forget `source`: every document stored under the label goes; its facts stay."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        await via.ok(
            "remember", {"content": "Acme Corp hired twelve people.", "source": "hr-notes"}
        )
        await via.ok("remember", {"content": "Acme Corp opened Lisbon.", "source": "press"})
        gone = await via.ok("forget", {"source": "hr-notes"})
        assert gone["already_forgotten"] is False
        names = [record["name"] for record in await via.records("document")]
        assert names == ["press"]
        assert len(facts(await via.ok("recall", {"subject": "Priya"}))) == 1

    api(scenario)


def test_S42_forgetting_all_removes_the_whole_scope(api: Door) -> None:
    """S42 forget `all: true` removes the whole scope; other scopes stay."""

    async def scenario(via: Via) -> None:
        await priya(via)
        await via.ok("relate", {"from": "Ann", "to": "Bo", "type": "knows", "scope": "other"})
        await via.ok("forget", {"all": True})
        assert await everything(via) == []
        scopes = [s["scope"] for s in (await via.ok("status", {}))["scopes"]]
        assert SCOPE not in scopes and "other" in scopes

    api(scenario)


def test_S43_forgetting_an_attribute_keeps_the_entity(api: Door) -> None:
    """S43 forget `attribute` {subject, key}: that attribute goes; the entity stays."""

    async def scenario(via: Via) -> None:
        entity = {"name": "Acme", "attributes": {"ceo": "Ada", "staff": 12}}
        await via.ok("remember", {"facts": {"entities": [entity]}})
        await via.ok("forget", {"attribute": {"subject": "Acme", "key": "ceo"}})
        item = (await via.ok("recall", {"subject": "Acme"}))["items"][0]
        assert set(item["attributes"]) == {"staff"}

    api(scenario)


@pytest.mark.parametrize("body", [{}, {"subject": "Acme Corp", "source": "hr-notes"}])
def test_S44_forget_takes_exactly_one_form(api: Door, body: Json) -> None:
    """S44 forget takes exactly one of subject, fact, passage, source, all, attribute; none or
    two are refused and nothing is forgotten."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        before = await everything(via)
        await via.refused("forget", body, "invalid_input", status=400)
        assert await everything(via) == before

    api(scenario)


def test_S45_an_unknown_name_is_refused_with_close_names(api: Door) -> None:
    """S45 an unknown name is 404 with up to three "did you mean" names; a close match is only
    suggested, never forgotten."""

    async def scenario(via: Via) -> None:
        people = [{"name": n, "type": "person"} for n in ("Dana", "Dina", "Dona", "Dena", "Zed")]
        await via.ok("remember", {"facts": {"entities": people}})
        refused = await via.refused("forget", {"subject": "Dxna"}, "unknown_name", status=404)
        assert 1 <= len(refused["suggestions"]) <= 3
        assert set(refused["suggestions"]) <= {"Dana", "Dina", "Dona", "Dena"}
        assert len(await via.records("entity")) == 5

    api(scenario)


FORMS: dict[str, Json] = {
    "subject": {"subject": "Priya Raman"},
    "fact": {"fact": {"from": "Priya Raman", "to": "Acme Corp", "type": "works_at"}},
    "passage": {"passage": "{doc_id}"},
    "source": {"source": "hr-notes"},
    "attribute": {"attribute": {"subject": "Acme Corp", "key": "staff"}},
    "all": {"all": True},
}


def _form(form: str, doc_id: Any) -> Json:
    body = FORMS[form]
    return {"passage": str(doc_id)} if form == "passage" else body


def test_S46_forgetting_again_is_already_forgotten(door: Door) -> None:
    """S46 forgetting what is already forgotten (each form: subject, fact, passage, source,
    attribute, all) answers the same 200 with already_forgotten: true and writes nothing."""

    async def scenario(via: Via) -> None:
        wrong: dict[str, Any] = {}
        for form in FORMS:
            scope = f"again-{form}"
            stored = await priya(via, moved=False, scope=scope)
            entity = {"name": "Acme Corp", "attributes": {"staff": 12}}
            await via.ok("remember", {"facts": {"entities": [entity]}, "scope": scope})
            body = {**_form(form, stored["doc_id"]), "scope": scope}
            status, first = await via.call("forget", body)
            if status != 200 or first.get("already_forgotten") is not False:
                wrong[form] = ("first", first)
                continue
            after = await everything(via, scope)
            status, again = await via.call("forget", body)
            if status != 200 or again.get("already_forgotten") is not True:
                wrong[form] = ("again", again)
            elif await everything(via, scope) != after:
                wrong[form] = ("again wrote", again)
        assert not wrong, report(wrong)

    door(scenario)


NEVER: dict[str, Json] = {
    "subject": {"subject": "Nobody Known"},
    "source": {"source": "never-used-label"},
    "passage": {"passage": "987654"},
    "attribute": {"attribute": {"subject": "Acme Corp", "key": "never_set"}},
    "scope": {"all": True, "scope": "never-used-scope"},
}


def test_S47_forgetting_what_never_existed_is_404(door: Door) -> None:
    """S47 a subject, source, passage, attribute or scope that never existed is 404 (unknown_name
    or not_found), and nothing is written."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        before = await everything(via)
        wrong: dict[str, Any] = {}
        for form, body in NEVER.items():
            status, reply = await via.call("forget", {"scope": SCOPE, **body})
            refused = reply.get("ok") is False and status in (404, None)
            if not refused or reply.get("error") not in (
                "unknown_name",
                "not_found",
                "item_not_found",
            ):
                wrong[form] = (status, reply)
        assert not wrong, report(wrong)
        assert await everything(via) == before

    door(scenario)


# -- export, import, status --------------------------------------------------------------------


def test_S48_export_pages_every_record_of_a_scope(api: Door) -> None:
    """S48 export pages every record (cursor, limit): an export header first, then entity, fact
    and document records; the last page's next is null; forgotten data is never exported."""

    async def scenario(via: Via) -> None:
        await priya(via)
        await via.ok("relate", {"from": "Gone Person", "to": "Acme Corp", "type": "works_at"})
        await via.ok("forget", {"subject": "Gone Person"})
        pages, cursor = [], None
        while True:
            page = await via.ok("export", {"limit": 2, **({"cursor": cursor} if cursor else {})})
            assert len(page["records"]) <= 2
            pages.append(page["records"])
            cursor = page["next"]
            if cursor is None:
                break
        records = [record for page in pages for record in page]
        assert records[0]["record"] == "export"
        kinds = {record["record"] for record in records[1:]}
        assert kinds == {"entity", "fact", "document"}
        assert "Gone Person" not in json.dumps(records)

    api(scenario)


def test_S49_exported_facts_carry_state_sources_and_both_ends_types(api: Door) -> None:
    """S49 an exported fact carries its state (current / ended with ended_at, replaced_by), its
    sources with dates, and both ends' types."""

    async def scenario(via: Via) -> None:
        await priya(via)
        exported = {r["object"]: r for r in await via.records("fact")}
        acme, globex = exported["Acme Corp"], exported["Globex"]
        assert (acme["state"], globex["state"]) == ("ended", "current")
        assert acme["ended_at"] and acme["replaced_by"]
        assert "2021-03-01" in json.dumps(acme["sources"])
        typed = {k: v for k, v in acme.items() if "type" in k and k != "relation"}
        assert ["person"] in typed.values() and ["company"] in typed.values(), acme

    api(scenario)


def test_S50_exported_documents_hold_their_text_once(api: Door) -> None:
    """S50 an exported document holds its text once, its live passages in order, its date and
    source label."""

    async def scenario(via: Via) -> None:
        await priya(via, moved=False)
        [document] = await via.records("document")
        assert document["text"] == "Priya Raman joined Acme Corp in March 2021. " + (
            "She leads the billing team."
        )
        starts = [p["start"] for p in document["passages"]]
        assert starts == sorted(starts)
        assert document["source"] == "hr-notes" and document["date"].startswith("2021-03-01")

    api(scenario)


def test_S51_import_reproduces_a_scope_and_a_page_twice_stores_nothing_twice(api: Door) -> None:
    """S51 import takes exported records into any scope; a page sent twice stores nothing twice;
    the reply counts what was imported, names what was skipped and why, and lists what an import
    does not reproduce."""

    async def scenario(via: Via) -> None:
        await priya(via)
        records = (await via.ok("export", {}))["records"]
        first = await via.ok("import", {"records": records, "scope": "copy"})
        assert first["imported"] >= 5 and first["not_reproduced"]
        again = await via.ok("import", {"records": records, "scope": "copy"})
        assert again["imported"] == 0
        assert all(skip["why"] for skip in again["skipped"])
        original = await everything(via)
        copied = await everything(via, "copy")
        assert len(copied) == len(original)
        copy = await via.ok("recall", {"subject": "Priya", "scope": "copy"})
        assert [f["object"] for f in facts(copy) if f["state"] == "current"] == ["Globex"]

    api(scenario)


def test_S52_status_describes_memory_and_a_scopes_ontology(api: Door) -> None:
    """S52 status says memory is on, which scopes hold data and, for one scope, its ontology:
    types and relations with counts, the biggest classes with exact member counts, relation
    spellings to reuse."""

    async def scenario(via: Via) -> None:
        await priya(via)
        status = await via.ok("status", {})
        assert status["memory"] == "on"
        assert SCOPE in [scope["scope"] for scope in status["scopes"]]
        ontology = status["ontology"]
        classes = {c["type"]: c["members"] for c in ontology["biggest_classes"]}
        assert classes == {"person": 1, "company": 1}
        assert ontology["relation_spellings"] == ["works_at"]

    api(scenario)


def test_S53_status_says_member_counts_are_exact(api: Door) -> None:
    """S53 status carries members_bound ("exact": live members, one fewer after each forget)."""

    async def scenario(via: Via) -> None:
        await priya(via)
        status = await via.ok("status", {})
        bound = find_key(status, "members_bound")
        assert bound and all(value == "exact" for value in bound), status
        await via.ok("forget", {"subject": "Priya Raman"})
        classes = (await via.ok("status", {}))["ontology"]["biggest_classes"]
        assert {c["type"]: c["members"] for c in classes} == {"company": 1}

    api(scenario)


# -- documents ---------------------------------------------------------------------------------

PARAGRAPHS = [
    "The quarterly review covers revenue, hiring and the new office in Lisbon. " * 3,
    "Priya Raman leads the billing team and owns the invoicing roadmap for next year. " * 3,
    "Security audits run every March; the last one found two minor issues in logging. " * 3,
]


def pdf(line_height: float) -> bytes:
    """Three paragraphs, each wrapped over several lines, with a clear gap between them."""
    from fpdf import FPDF

    document = FPDF()
    document.add_page()
    document.set_font("Helvetica", size=12)
    for text in PARAGRAPHS:
        document.multi_cell(0, line_height, text.strip())
        document.ln(10)
    return bytes(document.output())


def test_S54_the_kind_is_read_from_the_bytes_not_the_name(api: Door) -> None:
    """S54 a document's kind is read from its bytes, never its name; headings, paragraphs and list
    items come back in order; the reply has doc_id, text and blocks."""
    html = b"<html><body><h1>Billing</h1><p>Invoices go out monthly.</p><ul><li>Remind</li></ul>"

    async def scenario(via: Via) -> None:
        reply = await via.ok("document", {"content_base64": b64(html), "name": "report.pdf"})
        assert reply["text"].split() == ["Billing", "Invoices", "go", "out", "monthly.", "Remind"]
        assert "<" not in reply["text"]
        assert [block["kind"] for block in reply["blocks"]] == ["heading", "paragraph", "list_item"]
        assert str(reply["doc_id"]).isdecimal()

    api(scenario)


@pytest.mark.parametrize("line_height", [5, 8], ids=["single-spaced", "double-spaced"])
def test_S55_pdf_paragraphs_are_rebuilt_from_the_layout(api: Door, line_height: float) -> None:
    """S55 PDF paragraphs are rebuilt from the layout, not one per line: 3 wrapped paragraphs are
    3 blocks (block_count), and the upload is discarded (customs.emptied)."""

    async def scenario(via: Via) -> None:
        reply = await via.ok("document", {"content_base64": b64(pdf(line_height)), "name": "r"})
        assert reply["block_count"] == 3, reply.get("blocks")
        assert "emptied" in reply["customs"]
        paragraphs = reply["text"].split("\n\n")
        assert [" ".join(p.split()) for p in paragraphs] == [
            " ".join(p.split()) for p in PARAGRAPHS
        ]

    api(scenario)


def scanned_pdf() -> bytes:
    """A PDF whose only page is an image: nothing to read."""
    import io

    from fpdf import FPDF

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
        "rkJggg=="
    )
    document = FPDF()
    document.add_page()
    document.image(io.BytesIO(png), x=10, y=10, w=50)
    return bytes(document.output())


@pytest.mark.parametrize(
    ("data", "code", "status"),
    [
        (b"\x00\x01\x02binary\xff\xfe", "unsupported_media_type", 415),
        (b"%PDF-1.4 truncated", "document_corrupt", 422),
        (scanned_pdf(), "document_not_readable", 422),
    ],
    ids=["not-a-document", "corrupt", "scanned"],
)
def test_S56_a_bad_document_is_refused_by_name(
    api: Door, data: bytes, code: str, status: int
) -> None:
    """S56 not a document: 415; truncated or corrupt: document_corrupt (422); a scanned PDF:
    document_not_readable (422); nothing is stored."""

    async def scenario(via: Via) -> None:
        await via.refused(
            "document", {"content_base64": b64(data), "name": "x.pdf"}, code, status=status
        )
        assert await everything(via) == []

    api(scenario)


def test_S63_a_large_document_answers_sizes_not_text(api: Door) -> None:
    """S63 a document whose text is over 16 KiB answers text_bytes and block_count instead of its
    text and blocks (it is stored whole and found by recall and context)."""
    text = ("Invoices are sent on the first day of the month. " * 20 + "\n\n") * 30

    async def scenario(via: Via) -> None:
        reply = await via.ok("document", {"content_base64": b64(text.encode()), "name": "big.txt"})
        assert "text" not in reply and "blocks" not in reply
        assert reply["text_bytes"] > 16384
        assert reply["block_count"] == 30
        [document] = await via.records("document")
        assert document["text"].split() == text.split()

    api(scenario)


# -- refusals by name --------------------------------------------------------------------------

CALLS: dict[str, Json] = {
    "remember": {"content": "Ann met Bo."},
    "recall": {"subject": "Ann"},
    "context": {"query": "Ann"},
    "relate": {"from": "Ann", "to": "Cy", "type": "knows"},
    "forget": {"subject": "Ann"},
    "document": {"content_base64": b64(b"plain text"), "name": "a.txt"},
    "export": {},
    "import": {"records": []},
    "status": {},
}


def test_S57_unknown_arguments_are_refused_by_name(door: Door) -> None:
    """S57 an unknown parameter of any tool is refused by name (unknown_argument, HTTP 400),
    never dropped, and the store is unchanged."""

    async def scenario(via: Via) -> None:
        await via.ok("relate", {"from": "Ann", "to": "Bo", "type": "knows"})
        wrong: dict[str, Any] = {}
        for verb in VERBS:
            before = await everything(via)
            body = {"scope": SCOPE, **CALLS[verb], "bogus_param": 1}
            status, reply = await via.call(verb, body)
            if status not in (400, None) or not names_argument(reply, "bogus_param"):
                wrong[verb] = (status, reply.get("error"), reply.get("detail"))
            elif await everything(via) != before:
                wrong[verb] = "the store changed"
        assert not wrong, report(wrong)

    door(scenario)


def test_S58_an_unknown_tool_is_refused_by_name(mcp: Mcp) -> None:
    """S58 a tool the profile does not have is refused as unknown_tool, naming it."""

    async def scenario(tools: Tools) -> None:
        reply = await tools.refused("memory_everything", {}, "unknown_tool")
        assert "memory_everything" in reply["detail"]

    mcp(scenario)


# -- the doors ---------------------------------------------------------------------------------


@pytest.fixture
def printed(server: Server, servers: Servers) -> tuple[Path, Json]:
    """The stdio client configuration `recuerdo serve --profile semurg` printed on start."""
    out = servers.banners["semurg"]
    head = "MCP client configuration (stdio):"
    assert head in out, out
    config, _ = json.JSONDecoder().raw_decode(out[out.index(head) + len(head) :].lstrip())
    [entry] = config["mcpServers"].values()
    return server.base, entry


def test_S59_the_printed_client_config_names_the_profile(printed: tuple[Path, Json]) -> None:
    """S59 the client configuration that `serve --profile semurg` prints launches the semurg
    profile: its stdio args hold --profile semurg."""
    args = printed[1]["args"]
    assert "--profile" in args and args[args.index("--profile") + 1] == "semurg", args


def test_S60_the_printed_client_config_starts_the_semurg_tools(
    printed: tuple[Path, Json], seen: Seen
) -> None:
    """S60 pasting the printed stdio configuration gives a client the memory_* tools: it runs
    verbatim (an absolute command, the state directory in its arguments), whatever the
    client's working directory and environment."""
    base, entry = printed
    assert os.path.isabs(entry["command"]), entry
    args = entry["args"]
    assert "--state-dir" in args and args[args.index("--state-dir") + 1] == str(base), args
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=entry["command"],
        args=args,
        env={k: v for k, v in os.environ.items() if not k.startswith("RECUERDO_")},
        cwd=Path(sys.executable).anchor,
    )

    async def scenario() -> set[str]:
        with anyio.fail_after(30):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return {tool.name for tool in (await session.list_tools()).tools}

    assert "memory_remember" in run_async(scenario)


def test_S61_stdio_door_serves_the_same_tools(mcp: Mcp, tmp_path: Path, seen: Seen) -> None:
    """S61 `recuerdo mcp --profile semurg` serves over stdio the same tools as /mcp, and they
    work."""

    async def over_http(tools: Tools) -> set[str]:
        return set(await tools.listed())

    expected = mcp(over_http)
    assert {f"memory_{verb}" for verb in VERBS} <= expected

    async def scenario() -> None:
        async with stdio_tools(tmp_path, "desk", "semurg", seen) as tools:
            assert set(await tools.listed()) == expected
            via = Via(tools=tools)
            await via.ok("relate", {"from": "Ann", "to": "Bo", "type": "knows"})
            assert (await via.ok("recall", {"subject": "Ann"}))["state"] == "answered"

    run_async(scenario)


def test_X6_semurg_lifecycle_replies_are_typed(mcp: Mcp, server: Server, seen: Seen) -> None:
    """X6 typed results: the replies this module saw (forget, export, import, status, document)
    validate against the tools' outputSchema and the routes' 200 schemas."""

    async def scenario(tools: Tools) -> None:
        await check_output_schemas(tools, seen)

    mcp(scenario)
    check_route_schemas(server, seen, "/v1/memory/")
