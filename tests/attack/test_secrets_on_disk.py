"""Attack 3: credentials written through every door field, then looked for on disk.

Every credential shape below goes through every write verb and every string field that reaches
the store (text fields get a sentence around it, label fields the bare credential), each time
with a value of its own. Then the server is stopped and every file of the state folder (the
memory's ``.db``, ``-wal``, ``-shm`` and ``tokens.db``) is scanned for every raw value: zero hits.
Text that only looks like a credential keeps its exact words.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from .conftest import AttackServer, Launcher, hits, tokens_at_once

rng = random.Random(20_100)  # one fixed sequence: a failure replays with the same values

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def rand(alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


@dataclass
class Cred:
    label: str | None  # the bare credential, one line of at most 100 characters (tags too)
    text: str  # as it appears in prose or a config file
    values: list[str]  # what must never be found on disk


def _plain(value: str, label: str, text: str | None = None) -> Cred:
    return Cred(label, text or f"the config says {label} for production", [value])


def _assign(name: str, alphabet: str, length: int, sep: str = "=") -> Callable[[], Cred]:
    def make() -> Cred:
        value = rand(alphabet, length)
        return _plain(value, f"{name}{sep}{value}")

    return make


def _url(template: str) -> Callable[[], Cred]:
    def make() -> Cred:
        value = rand(ALNUM, 18)
        return _plain(value, template.format(value))

    return make


def _prefixed(prefix: str, alphabet: str, length: int) -> Callable[[], Cred]:
    def make() -> Cred:
        value = prefix + rand(alphabet, length)
        return _plain(value, value, f"paste {value} into the deploy settings")

    return make


def _slack(prefix: str) -> Callable[[], Cred]:
    def make() -> Cred:
        value = f"{prefix}-{rand(string.digits, 11)}-{rand(string.digits, 12)}-{rand(ALNUM, 24)}"
        return _plain(value, value, f"the bot uses {value} to post")

    return make


def _azure() -> Cred:
    value = rand(B64, 86) + "=="
    text = (
        "DefaultEndpointsProtocol=https;AccountName=shopstore;"
        f"AccountKey={value};EndpointSuffix=core.windows.net"
    )
    return Cred(f"AccountKey={value}", text, [value])


def _jwt() -> Cred:
    payload = base64.urlsafe_b64encode(
        json.dumps({"sub": rand(ALNUM, 6)}, separators=(",", ":")).encode()
    )
    signature = rand(URLSAFE, 32)
    token = f"eyJhbGciOiJIUzI1NiJ9.{payload.decode().rstrip('=')}.{signature}"
    return Cred(token, f"session cookie {token} from the browser", [signature, token])


def _uuid_key() -> Cred:
    value = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return _plain(value, f"LICENSE_KEY={value}")


def _pem() -> Cred:
    lines = [rand(B64, 64) for _ in range(4)]
    block = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *lines, "-----END RSA PRIVATE KEY-----"])
    return Cred(None, f"the server key:\n{block}\nkeep it safe", lines)


def _rcd() -> Cred:
    # The format of `recuerdo token create` (checked against a real one below).
    value = "rcd_" + rand(URLSAFE, 43)
    return _plain(value, value, f"RECUERDO_TOKEN is {value} on the build box")


SHAPES: dict[str, Callable[[], Cred]] = {
    "aws_secret_access_key = (ini)": _assign("aws_secret_access_key", B64, 40, " = "),
    "AWS_SECRET_ACCESS_KEY= (env)": _assign("AWS_SECRET_ACCESS_KEY", B64, 40),
    "X_PASSWORD=": _assign("DB_PASSWORD", ALNUM, 18),
    "X_API_KEY=": _assign("MAILGUN_API_KEY", ALNUM, 32),
    "X_SECRET=": _assign("JWT_SECRET", ALNUM, 24),
    "X_TOKEN=": _assign("CI_DEPLOY_TOKEN", ALNUM, 24),
    "postgres:// password": _url("postgres://shop:{}@db.internal:5432/shop"),
    "mysql:// password": _url("mysql://root:{}@10.0.0.5:3306/app"),
    "mongodb+srv:// password": _url("mongodb+srv://admin:{}@cluster0.ab1cd.mongodb.net/prod"),
    "redis://:password@": _url("redis://:{}@cache.internal:6379/0"),
    "amqp:// password": _url("amqp://guest:{}@mq.internal:5672/"),
    "https:// password": _url("https://deploy:{}@git.example.com/shop.git"),
    "netrc password": _url("machine api.example.com login deploy password {}"),
    "Azure AccountKey=": _azure,
    "Slack xoxb-": _slack("xoxb"),
    "Slack xoxa-": _slack("xoxa"),
    "Slack xoxp-": _slack("xoxp"),
    "Slack xoxr-": _slack("xoxr"),
    "Stripe sk_live_": _prefixed("sk_live_", ALNUM, 24),
    "Stripe rk_live_": _prefixed("rk_live_", ALNUM, 24),
    "Google AIza": _prefixed("AIza", URLSAFE, 35),
    "JWT": _jwt,
    "recuerdo rcd_ token": _rcd,
    "UUID as *_KEY": _uuid_key,
    "PEM private key": _pem,
    "OpenAI sk-proj-": _prefixed("sk-proj-", URLSAFE, 40),
    "AWS access key id": _prefixed("AKIA", string.ascii_uppercase + string.digits, 16),
    "GitHub ghp_": _prefixed("ghp_", ALNUM, 36),
    "GitLab glpat-": _prefixed("glpat-", URLSAFE, 20),
    "password: value": _assign("password", ALNUM, 16, ": "),
    "Bearer token": _assign("Authorization: Bearer", URLSAFE, 32, " "),
}

# Text that only looks like a credential: it must come back word for word.
HARMLESS = [
    "The API is slow on Mondays; retry after lunch.",
    'password_field = form.get("password")',
    "request 0f8c2a9e-5b7d-4c1e-9a3f-6d2b8e4c7a10 failed twice",
    "fixed in commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "the token economy of the game rewards patience",
    "the key is under the mat",
    "the db is postgres://app@db.internal:5432/shop (the URL carries no credentials)",
    "AccountKey rotation happens monthly",
    "a passwordless login flow via email links",
]


@dataclass
class Planted:
    shape: str
    field: str
    values: list[str]


@dataclass(repr=False)  # a failure report shows the test's own message, not every reply
class Harvest:
    planted: list[Planted] = field(default_factory=list)
    served: str = ""  # every read answer after the writes
    on_disk: dict[str, list[str]] = field(default_factory=dict)  # value -> files holding it
    entry_text: dict[str, str] = field(default_factory=dict)  # shape -> remember content read back
    harmless: dict[str, list[str]] = field(default_factory=dict)  # text -> what came back
    real_token: str = ""
    split_key_lines: list[str] = field(default_factory=list)


class Writer:
    """Plants credentials: each call of :meth:`text` or :meth:`label` makes a value of its own
    and records which field it went to."""

    def __init__(self, server: AttackServer, token: str, harvest: Harvest) -> None:
        self.server = server
        self.token = token
        self.harvest = harvest

    def ok(self, verb: str, body: dict[str, Any]) -> Any:
        """The call's result. A scope named like a credential is refused (0139: stored
        redacted, every such scope was one bucket out of its writer's reach): the refusal must
        not echo it, and the call is made again without it. The value stays planted, so the
        scan still checks that it reached no file."""
        reply = self.server.call(verb, body, token=self.token)
        if reply.status == 400 and "scope" in body and b"named like a credential" in reply.body:
            assert body["scope"].encode() not in reply.body, (verb, reply)
            reply = self.server.call(
                verb, {k: v for k, v in body.items() if k != "scope"}, token=self.token
            )
        assert reply.status == 200, (verb, reply)
        return reply.json()

    def text(self, shape: str, where: str, index: int) -> str:
        cred = SHAPES[shape]()
        self.harvest.planted.append(Planted(shape, where, cred.values))
        return f"Note {index}: {cred.text} (end of note {index})"

    def label(self, shape: str, where: str, max_chars: int = 100) -> str | None:
        cred = SHAPES[shape]()
        if cred.label is None or len(cred.label) > max_chars:
            return None  # a field this shape cannot fit: not planted
        assert len(cred.label) <= 100 and "\n" not in cred.label, cred.label
        self.harvest.planted.append(Planted(shape, where, cred.values))
        return cred.label

    def labels(self, where: str) -> list[str]:
        """One label of every shape that has one (a list field: tags, steps). Each names its
        shape too: once redacted, bare credentials of one kind are alike (``secret(API)``),
        and a list that must hold distinct values (a plan's steps) would refuse them."""
        found = [
            (shape, self.label(shape, where, max_chars=100 - len(shape) - 2)) for shape in SHAPES
        ]
        return [f"{shape}: {value}" for shape, value in found if value is not None]

    def write_batches(self) -> None:
        """Fields that take a list or a free query: every shape in one call."""
        texts = {
            where: [self.text(shape, where, i) for i, shape in enumerate(SHAPES)]
            for where in (
                "remember_many.content",
                "add_messages.text",
                "remember_knowledge.passages",
                "remember_knowledge.messages",
            )
        }
        self.ok(
            "remember",
            {"category": "learning", "content": "tagged", "tags": self.labels("remember.tags")},
        )
        batch_tags = self.labels("remember_many.tags")
        entries: list[dict[str, Any]] = [
            {"category": "context", "content": t} for t in texts["remember_many.content"]
        ]
        for entry, tag in zip(entries, batch_tags, strict=False):  # a tag each but the last
            entry["tags"] = [tag]
        self.ok("remember_many", {"entries": entries})
        self.ok(
            "save",
            {"title": "Tagged note", "content": "body", "tags": self.labels("save.tags")},
        )
        speakers = self.labels("add_messages.speaker")
        self.ok(
            "add_messages",
            {
                "conversation": "batch",
                "messages": [
                    {"speaker": speakers[i % len(speakers)], "text": t}
                    for i, t in enumerate(texts["add_messages.text"])
                ],
            },
        )
        self.ok(
            "remember_knowledge",
            {"passages": [{"text": t} for t in texts["remember_knowledge.passages"]]},
        )
        self.ok(
            "remember_knowledge",
            {
                "messages": [
                    {"role": "user", "content": t} for t in texts["remember_knowledge.messages"]
                ]
            },
        )
        self.ok("create_progress", {"task": "batch", "steps": self.labels("create_progress.steps")})
        records: list[dict[str, Any]] = []
        for index, shape in enumerate(SHAPES):
            records += self.records(shape, index)
        self.ok("import", {"records": records, "scope": "imported"})
        # Reads write too: the retrieval audit keeps queries and filters.
        self.ok("search", {"query": " ; ".join(self.labels("search.query"))})
        self.ok("recall", {"search": " ; ".join(self.labels("recall.search"))})
        self.ok("context", {"query": " ; ".join(self.labels("context.query"))})

    def write_single(self, shape: str, index: int) -> None:
        """Fields that take one value per call."""

        def text(where: str) -> str:
            return self.text(shape, where, index)

        def label(where: str) -> str | None:
            return self.label(shape, where)

        def labelled(**fields: str | None) -> dict[str, Any]:
            return {name: value for name, value in fields.items() if value is not None}

        entry = self.ok(
            "remember",
            {
                "category": "learning",
                "content": text("remember.content"),
                **labelled(scope=label("remember.scope")),
            },
        )
        note = self.ok(
            "save",
            {
                "title": label("save.title") or f"Key {index}",
                "content": text("save.content"),
                **labelled(
                    key=label("save.key"),
                    scope=label("save.scope"),
                    session=label("save.session"),
                ),
            },
        )
        self.ok("edit", {"id": note["id"], "operation": "append", "content": text("edit.content")})
        link_type = self.label(shape, "link.type", max_chars=64)  # link types are short
        if link_type is not None:
            self.ok("link", {"from_id": note["id"], "to_id": entry, "type": link_type})
        self.ok(
            "remember_about",
            {
                "axis": "user",
                "observation": text("remember_about.observation"),
                "summary": text("remember_about.summary"),
                "category": label("remember_about.category") or f"keys-{index}",
                **labelled(
                    project=label("remember_about.project"),
                    idempotency_key=label("remember_about.idempotency_key"),
                ),
            },
        )
        self.ok(
            "capture_passive",
            {
                "text": "## Key Learnings\n1. " + text("capture_passive.text"),
                **labelled(
                    scope=label("capture_passive.scope"),
                    session=label("capture_passive.session"),
                    source=label("capture_passive.source"),
                ),
            },
        )
        session = label("session_start.id") or f"session-{index}"
        self.ok(
            "session_start",
            {
                "id": session,
                **labelled(
                    project=label("session_start.project"),
                    directory=label("session_start.directory"),
                ),
            },
        )
        self.ok("session_end", {"id": session, "summary": text("session_end.summary")})
        self.ok(
            "add_messages",
            {
                "conversation": label("add_messages.conversation") or f"conv-{index}",
                **labelled(scope=label("add_messages.scope")),
                "messages": [{"speaker": "Ann", "text": f"message {index}"}],
            },
        )
        one, two = f"Kovalent{index}", f"Borintha{index}"
        self.ok(
            "remember_knowledge",
            {
                "content": f"{one} met {two}. " + text("remember_knowledge.content"),
                "facts": {
                    "entities": [
                        {
                            "name": one,
                            "type": "person",
                            "attributes": labelled(api_key=label("entity attribute")),
                        }
                    ],
                    "relations": [
                        {
                            "source": one,
                            "target": two,
                            "type": "met",
                            "attributes": labelled(note=label("relation attribute")),
                        }
                    ],
                },
                **labelled(
                    source=label("remember_knowledge.source"),
                    scope=label("remember_knowledge.scope"),
                ),
            },
        )
        self.ok(
            "relate",
            {
                "from": one,
                "to": two,
                "type": "knows",
                "attributes": labelled(token=label("relate.attributes")),
                **labelled(scope=label("relate.scope")),
            },
        )
        document = f"# Runbook {index}\n\n" + text("ingest.document") + "\n"
        self.ok(
            "ingest",
            {
                "content_base64": base64.b64encode(document.encode()).decode(),
                **labelled(
                    name=label("ingest.name"),
                    source=label("ingest.source"),
                    scope=label("ingest.scope"),
                ),
            },
        )
        self.ok(
            "add_rule",
            {
                "name": label("add_rule.name") or f"rule-{index}",
                "level": "must",
                "description": text("add_rule.description"),
                **labelled(category=label("add_rule.category")),
            },
        )
        # Labels that differ only by a credential become alike once redacted: the index keeps
        # each plan its own (its name still carries the credential).
        plan = f"{label('create_progress.task') or 'plan'} #{index}"
        self.ok("create_progress", {"task": plan, "steps": [f"a{index}", f"b{index}", f"c{index}"]})
        step = {"task": plan}
        self.ok("complete_step", {**step, "step": f"a{index}", "result": text("complete_step")})
        self.ok("fail_step", {**step, "step": f"b{index}", "error": text("fail_step")})
        self.ok("skip_step", {**step, "step": f"c{index}", "reason": text("skip_step")})

    def records(self, shape: str, index: int) -> list[dict[str, Any]]:
        """Import records (document, entity attribute, note, entry) holding the shape."""
        now = "2024-01-01T00:00:00Z"
        document = self.text(shape, "import.document", index)
        attribute = self.label(shape, "import.entity attribute")
        tag = self.label(shape, "import.entry.tags")
        return [
            {
                "record": "document",
                "key": f"doc-{index}",
                "name": self.label(shape, "import.document.name") or f"doc {index}",
                "text": document,
                "passages": [{"start": 0, "end": len(document), "mentions": []}],
                "kind": "text",
            },
            {
                "record": "entity",
                "key": f"ent-{index}",
                "name": f"Imported{index}",
                "types": [],
                "attributes": []
                if attribute is None
                else [
                    {
                        "key": "password",
                        "value": {"type": "string", "value": attribute},
                        "recorded_at": now,
                    }
                ],
                "recorded_at": now,
            },
            {
                "record": "note",
                "key": f"note-{index}",
                "title": self.label(shape, "import.note.title") or f"note {index}",
                "kind": "manual",
                "tags": [],
                "created_at": now,
                "revisions": [
                    {
                        "version": 1,
                        "title": f"note {index}",
                        "kind": "manual",
                        "content": self.text(shape, "import.note.content", index),
                        "operation": "write",
                        "principal": "main",
                        "created_at": now,
                    }
                ],
            },
            {
                "record": "entry",
                "key": f"entry-{index}",
                "category": "learning",
                "content": self.text(shape, "import.entry.content", index),
                "tags": [] if tag is None else [tag],
                "source": "main",
                "created_at": now,
            },
        ]


READS: list[tuple[str, dict[str, Any]]] = [
    ("recall", {"from": "*", "limit": 100_000}),
    ("summary", {}),
    ("list_progress", {}),
    ("get_rules", {}),
    ("journal", {"limit": 1000}),
    ("audit", {"limit": 1000}),
    ("recent", {"max_bytes": 1_000_000}),
    ("profile", {"axis": "user"}),
    ("export", {"scope": "user", "limit": 1024}),
    ("export", {"scope": "imported", "limit": 1024}),
]


@pytest.fixture(scope="module")
def harvest(launch: Launcher, tmp_path_factory: pytest.TempPathFactory) -> Harvest:
    """Every shape through every field of a real server (authenticated with a token made by
    ``recuerdo token create``), every read answer kept, the server stopped, every file scanned."""
    base = tmp_path_factory.mktemp("secrets")
    # The server starts while the token is made: it looks tokens up at its first request.
    server = launch(base, wait=False)
    (token,) = tokens_at_once(base, ["--principal", "writer", "--tenant", "acme"])
    server.ready()
    crop = Harvest(real_token=token)
    writer = Writer(server, token, crop)
    for index, shape in enumerate(SHAPES):
        writer.write_single(shape, index)
    writer.write_batches()
    # The real token, pasted into an entry.
    server.ok("remember", {"category": "context", "content": f"our token is {token}"}, token=token)
    crop.planted.append(Planted("recuerdo rcd_ token (real)", "remember.content", [token]))
    # A private key pasted line by line, one message per line.
    key_lines = [rand(B64, 64) for _ in range(5)]
    block = ["-----BEGIN OPENSSH PRIVATE KEY-----", *key_lines, "-----END OPENSSH PRIVATE KEY-----"]
    server.ok(
        "add_messages",
        {"conversation": "paste", "messages": [{"speaker": "Ann", "text": t} for t in block]},
        token=token,
    )
    crop.split_key_lines = key_lines
    for text in HARMLESS:
        entry = server.ok("remember", {"category": "context", "content": text}, token=token)
        note = server.ok("save", {"title": text, "content": text}, token=token)
        got_note = server.ok("get", {"id": note["id"]}, token=token)
        entries = server.ok("recall", {"from": "*", "limit": 100_000}, token=token)
        got_entry = next(e["content"] for e in entries if e["id"] == entry)
        crop.harmless[text] = [got_entry, got_note["title"], got_note["content"]]
    entries = server.ok("recall", {"from": "*", "limit": 100_000}, token=token)
    for index, shape in enumerate(SHAPES):
        crop.entry_text[shape] = next(
            e["content"] for e in entries if e["content"].startswith(f"Note {index}: ")
        )
    answers = [server.ok(verb, body, token=token) for verb, body in READS]
    crop.served = json.dumps(answers, ensure_ascii=False)
    server.stop()
    values = [v for p in crop.planted for v in p.values] + key_lines
    crop.on_disk = hits(base, values)
    return crop


def test_the_table_is_wide_enough(harvest: Harvest) -> None:
    """At least 25 shapes, every one planted in at least 20 fields, every value unique (so one
    field's leak is never mistaken for another's), and the rcd_ shape is the real format."""
    assert len(SHAPES) >= 25
    per_shape: dict[str, set[str]] = {}
    for planted in harvest.planted:
        per_shape.setdefault(planted.shape, set()).add(planted.field)
    assert all(len(fields) >= 20 for shape, fields in per_shape.items() if shape in SHAPES)
    values = [v for p in harvest.planted for v in p.values]
    assert len(values) == len(set(values))
    assert re.fullmatch(r"rcd_[A-Za-z0-9_-]{43}", harvest.real_token)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_no_credential_reaches_the_disk(harvest: Harvest, shape: str) -> None:
    """Every field this shape was written through: its raw value is in no file of the state
    folder (.db, -wal, -shm, tokens.db) and in no read answer."""
    mine = [p for p in harvest.planted if p.shape == shape]
    leaks = [p.field for p in mine if any(v in harvest.on_disk for v in p.values)]
    served = [p.field for p in mine if any(v in harvest.served for v in p.values)]
    assert leaks == [], f"{shape}: on disk through {len(leaks)} of {len(mine)} fields: {leaks}"
    assert served == [], f"{shape}: served back through {served}"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_redacted_value_leaves_a_marker(harvest: Harvest, shape: str) -> None:
    """The entry still reads as the sentence it was, with ``secret(KIND)`` where the
    credential stood."""
    index = list(SHAPES).index(shape)
    content = harvest.entry_text[shape]
    assert content.startswith(f"Note {index}: ") and content.endswith(f"(end of note {index})")
    assert re.search(r"secret\([A-Z_]+\)", content), content


def test_the_real_token_is_not_kept(harvest: Harvest) -> None:
    """A token made by ``recuerdo token create``, pasted into an entry, is on no file."""
    assert harvest.on_disk.get(harvest.real_token) is None
    assert harvest.real_token not in harvest.served, "served back"


def test_a_key_pasted_over_several_messages_is_redacted_line_by_line(harvest: Harvest) -> None:
    """add_messages with a private key block sent one line per message: no line of the key
    reaches the disk."""
    leaked = [line for line in harvest.split_key_lines if line in harvest.on_disk]
    assert leaked == [], f"{len(leaked)} of {len(harvest.split_key_lines)} key lines on disk"


@pytest.mark.parametrize("text", HARMLESS)
def test_text_that_only_looks_like_a_credential_is_kept(harvest: Harvest, text: str) -> None:
    """Ordinary words (a form field named password, a request UUID, a git SHA, a URL without
    a password, 'token economy') come back exactly as written, in entries and notes."""
    assert harvest.harmless[text] == [text, text, text]
