"""Attack 4: what forgetting leaves on disk.

For each form of forgetting a unique marker is written, searched for in every way that leaves a
trace (search, recall with ``search=``, context, about, filters naming it), and forgotten; then
the server is stopped and every file of the state folder is scanned: no byte of the marker,
in any case. Full-text indexes store words lower-cased and prefix-compressed, so the scan also
looks for the marker's core (a middle slice no other word shares).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from .conftest import AttackServer, Launcher, Reply, hits

# One marker per form; rare, distinct first letters and no stemmable ending.
MARKERS = {
    "entry forget": "Jxqorvathembqx",
    "note hard delete": "Kzwylpendraxqx",
    "forget_knowledge passage": "Vqonbiltreskqx",
    "forget_knowledge source": "Wxuzgamorthiqx",
    "forget_knowledge fact": "Yjeqtulvornaqx",
    "forget_knowledge subject": "Zpokrimsuvelqx",
    "forget_knowledge all": "Xwibdaqomeltqx",
    "forget_knowledge attribute": "Qhavyrtulemsqx",
    "note hard delete, old version": "Ubrexomaltinqx",
}
MESSAGE_MARKER = "Fyqzurbeklomqx"  # a conversation message forgotten as a passage


def needles(marker: str) -> list[str]:
    return [marker, marker[3:-2]]


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Trace:
    forgot: dict[str, Reply] = field(default_factory=dict)
    before: dict[str, list[str]] = field(default_factory=dict)  # found on disk before forgetting
    after: dict[str, list[str]] = field(default_factory=dict)  # found after, server stopped
    found_after: dict[str, list[Any]] = field(default_factory=dict)  # search results after
    message_forget: Reply | None = None
    message_found_after: list[Any] = field(default_factory=list)
    configure: list[Reply] = field(default_factory=list)


def _search_everywhere(server: AttackServer, marker: str, **filters: Any) -> None:
    """Every read that records a query (or filters) naming the marker in the audit."""
    server.ok("search", {"query": marker, **filters})
    server.ok("search", {"query": f"what about {marker.lower()}?"})
    server.ok("recall", {"search": marker, "from": "*"})
    scope = {k: v for k, v in filters.items() if k == "scope"}
    server.ok("context", {"query": marker, **scope})
    server.call("about", {"subject": marker, **scope})  # may be unknown_name: still recorded
    server.ok("audit", {"limit": 5})  # the audit is flushed to disk now


def _plant(server: AttackServer) -> dict[str, Callable[[], Reply]]:
    """Write each form's marker; return the call that forgets it."""
    filler = "Ordinary background passage about shipping schedules and invoices. " * 3
    for number in range(40):  # enough pages that deleted rows would linger if not erased
        server.ok("remember_knowledge", {"content": f"{filler} number {number}", "source": "noise"})
    m = MARKERS
    entry = server.ok("remember", {"category": "learning", "content": f"{m['entry forget']} rule"})
    note = server.ok(
        "save",
        {"title": f"{m['note hard delete']} plan", "content": f"Body {m['note hard delete']}."},
    )
    server.ok("edit", {"id": note["id"], "operation": "append", "content": "Second version."})
    # A word only an earlier version holds: it lives on in that version's delta alone.
    old = m["note hard delete, old version"]
    kept = server.ok("save", {"title": "Plan of record", "content": f"Body {old} first."})
    server.ok(
        "edit",
        {"id": kept["id"], "operation": "find_replace", "find": old, "content": "nothing"},
    )
    server.ok("edit", {"id": kept["id"], "operation": "append", "content": "Third version."})
    doc = server.ok(
        "remember_knowledge",
        {"content": f"The passage {m['forget_knowledge passage']} stands alone.", "source": "p"},
    )
    source = f"src-{m['forget_knowledge source']}"
    server.ok(
        "remember_knowledge",
        {"content": f"Sourced text {m['forget_knowledge source']} here.", "source": source},
    )
    server.ok(
        "relate",
        {
            "from": "Orvel Tamsin",
            "to": "Brightline Ltd",
            "type": "works_with",
            "attributes": {"project": m["forget_knowledge fact"]},
        },
    )
    subject = f"{m['forget_knowledge subject']} Vantheris"
    server.ok(
        "remember_knowledge",
        {
            "content": f"{subject} leads the night shift.",
            "facts": {"entities": [{"name": subject, "type": "person"}]},
        },
    )
    server.ok(
        "remember_knowledge",
        {"content": f"Scoped note {m['forget_knowledge all']} only here.", "scope": "wipe-me"},
    )
    server.ok(
        "remember_knowledge",
        {
            "content": "Pellam Orrick keeps the keys.",
            "facts": {
                "entities": [
                    {
                        "name": "Pellam Orrick",
                        "type": "person",
                        "attributes": {"codename": m["forget_knowledge attribute"]},
                    }
                ]
            },
        },
    )
    for form, marker in m.items():
        filters: dict[str, Any] = {}
        if form == "forget_knowledge source":
            filters = {"source": source}
        elif form == "forget_knowledge all":
            filters = {"scope": "wipe-me"}
        _search_everywhere(server, marker, **filters)
    server.ok("about", {"subject": subject})
    server.ok("about", {"subject": "Pellam Orrick"})
    server.ok("about", {"subject": "Orvel Tamsin"})
    fact = {"from": "Orvel Tamsin", "to": "Brightline Ltd", "type": "works_with"}
    return {
        "entry forget": lambda: server.call("forget", {"id": entry}),
        "note hard delete": lambda: server.call("delete", {"id": note["id"], "hard": True}),
        "note hard delete, old version": lambda: server.call(
            "delete", {"id": kept["id"], "hard": True}
        ),
        "forget_knowledge passage": lambda: server.call(
            "forget_knowledge", {"passage": doc["doc_id"]}
        ),
        "forget_knowledge source": lambda: server.call("forget_knowledge", {"source": source}),
        "forget_knowledge fact": lambda: server.call("forget_knowledge", {"fact": fact}),
        "forget_knowledge subject": lambda: server.call("forget_knowledge", {"subject": subject}),
        "forget_knowledge all": lambda: server.call(
            "forget_knowledge", {"all": True, "scope": "wipe-me"}
        ),
        "forget_knowledge attribute": lambda: server.call(
            "forget_knowledge", {"attribute": {"subject": "Pellam Orrick", "key": "codename"}}
        ),
    }


@pytest.fixture(scope="module")
def trace(launch: Launcher) -> Trace:
    server = launch()
    seen = Trace()
    forgetters = _plant(server)
    added = server.ok(
        "add_messages",
        {"conversation": "c1", "messages": [{"speaker": "Ann", "text": f"{MESSAGE_MARKER} hi"}]},
    )
    _search_everywhere(server, MESSAGE_MARKER)
    everything = [*MARKERS.values(), MESSAGE_MARKER]
    on_disk = hits(server.base, [n for m in everything for n in needles(m)], fold=True)
    seen.before = {m: [n for n in needles(m) if n in on_disk] for m in everything}
    for form, forget in forgetters.items():
        seen.forgot[form] = forget()
    seen.message_forget = server.call("forget_knowledge", {"passage": added["ids"][0]})
    seen.configure = [
        server.call("configure", {}),
        server.call("configure", {"audit_retention_days": 30}),
        server.call("configure", {}),
        server.call("configure", {"audit_retention_days": -1}),
        server.call("configure", {"audit_retention_days": "soon"}),
    ]
    server.stop()
    on_disk = hits(server.base, [n for m in everything for n in needles(m)], fold=True)
    seen.after = {m: [n for n in needles(m) if n in on_disk] for m in everything}
    # Searching for a marker again records it again (a new query): only after the scan.
    again = launch(server.base)
    for form, marker in MARKERS.items():
        seen.found_after[form] = again.ok("search", {"query": marker})["results"]
    seen.message_found_after = again.ok(
        "search", {"query": MESSAGE_MARKER, "scope": "conversation:c1"}
    )["results"]
    again.stop()
    return seen


@pytest.mark.parametrize("form", list(MARKERS))
def test_forgetting_leaves_no_byte_of_the_marker(trace: Trace, form: str) -> None:
    """Written, searched (so the retrieval audit holds queries and filters naming it),
    forgotten, server stopped: the marker is in no file of the state folder, in any case."""
    marker = MARKERS[form]
    assert trace.before[marker], "the marker was on disk before forgetting (control)"
    reply = trace.forgot[form]
    assert reply.status == 200, reply
    assert '"already_forgotten":true' not in reply.body.decode(), reply
    assert trace.found_after[form] == []
    assert trace.after[marker] == [], f"{form}: {trace.after[marker]} still on disk"


def test_forgetting_a_message_is_never_a_false_success(trace: Trace) -> None:
    """forget_knowledge {"passage": <a message id>}: either forgotten for real (then search no
    longer finds it and no byte of it stays on disk) or refused by name; never
    ``already_forgotten: true`` while the message is still stored."""
    reply = trace.message_forget
    assert reply is not None
    assert trace.before[MESSAGE_MARKER], "the message was on disk before (control)"
    if reply.status == 200:
        assert reply.json().get("already_forgotten") is False, reply
        assert trace.message_found_after == []
        assert trace.after[MESSAGE_MARKER] == []
    else:
        shape = reply.json()
        assert 400 <= reply.status < 500 and shape["ok"] is False, reply
        assert shape["error"] != "internal" and shape["detail"], reply
        assert trace.message_found_after != []  # refused: the message is as it was


def test_audit_retention_is_a_setting(trace: Trace) -> None:
    """configure shows audit_retention_days (default 90), accepts a new value and refuses a
    negative or non-number one with invalid_input."""
    default, changed, shown, negative, word = trace.configure
    assert default.status == 200 and default.json().get("audit_retention_days") == 90, default
    assert changed.status == 200 and changed.json().get("audit_retention_days") == 30, changed
    assert shown.json().get("audit_retention_days") == 30, shown
    for refused in (negative, word):
        assert refused.status == 400 and refused.json()["error"] == "invalid_input", refused
