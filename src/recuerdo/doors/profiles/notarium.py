"""The Notarium profile: its tool names and argument names over notes and retrieval.

Notarium's own spellings are accepted beside ours (``budgetTokens`` for ``budget_tokens``,
``findReplace`` for ``find_replace``, ...); any other argument is refused by name. A note is
addressed as ``/m/<id>``, so replies that name a note carry that ``path``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ...errors import InvalidInput
from ...model import Redactions
from . import ToolMap, drop_none, prop, schema

_PROJECT = prop("string", "The project.")
OPERATIONS = ("append", "prepend", "replace", "replace_section", "find_replace")
# The seed's camelCase spellings of our names (arguments and operation values alike).
CAMEL = {
    "budget_tokens": "budgetTokens",
    "max_per_source": "maxPerSource",
    "version_token": "versionToken",
    "idempotency_key": "idempotencyKey",
    "replace_section": "replaceSection",
    "find_replace": "findReplace",
}
MEMORY_CLASS = "agent-memory"
MEMORY_KIND = "memory"  # the kind remember_about gives category notes


@with_config(ConfigDict(extra="forbid"))
class NotariumRemembered(TypedDict):
    """remember_about_*'s reply: where the observation went (the tool chose it)."""

    note_id: int
    path: str
    version_token: str
    outcome: Literal["created", "appended", "skipped"]
    body_bytes: int
    body_hash: str
    summary_updated: bool
    category: str
    scope: str
    redacted: NotRequired[Redactions]


def path_of(note_id: int) -> str:
    return f"/m/{note_id}"


def _spelled(args: dict[str, Any], name: str) -> Any:
    """An argument given under our name or the seed's camelCase one (not both)."""
    camel = CAMEL[name]
    if name in args and camel in args and args[name] != args[camel]:
        raise InvalidInput(f"{name} and {camel} are one argument: give one of them")
    return args.get(name, args.get(camel))


def _both(properties: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Properties with each camelCase spelling beside ours."""
    shown = dict(properties)
    for name, spec in properties.items():
        if name in CAMEL:
            shown[CAMEL[name]] = {**spec, "description": f"Same as {name}."}
    return shown


def _project_scope(args: dict[str, Any]) -> str | None:
    project = args.get("project")
    return None if project is None else f"project:{project}"


def _always(args: dict[str, Any]) -> bool:
    """recall takes no scope: the scopes it reads for a project are always its own choice, of
    which a token limited to scopes reads those it reaches (decision 0173)."""
    return True


def _remember(axis: str):  # type: ignore[no-untyped-def]
    def translate(a: dict[str, Any]) -> dict[str, Any]:
        return drop_none(
            {
                "axis": axis,
                "observation": a["observation"],
                "category": a.get("category"),
                "project": a.get("project"),
                "summary": a.get("summary"),
                "version_token": _spelled(a, "version_token"),
                "idempotency_key": _spelled(a, "idempotency_key"),
            }
        )

    return translate


def _remembered(reply: dict[str, Any], memory: Any = None) -> NotariumRemembered:
    return {**reply, "path": path_of(reply["note_id"])}  # type: ignore[typeddict-item]


def _with_paths(reply: dict[str, Any], memory: Any = None) -> dict[str, Any]:
    hits = [{**hit, "path": path_of(hit["id"])} for hit in reply["results"]]
    return {**reply, "results": hits}


def _remember_schema(project: bool) -> dict[str, Any]:
    properties = _both(
        {
            "observation": prop("string", "The fact to remember."),
            "category": prop("string", "A label such as 'preferences'."),
            "summary": prop("string", "One line about the whole category."),
            "version_token": prop("string", "The token you last read."),
            "idempotency_key": prop("string", "Retries with this key are skipped."),
        }
    )
    if project:
        properties = {"project": _PROJECT, **properties}
    return schema(properties, ["project", "observation"] if project else ["observation"])


def _operation(value: Any) -> Any:
    snake = {camel: name for name, camel in CAMEL.items()}
    return snake.get(value, value) if isinstance(value, str) else value


def _class(value: Any) -> Any:
    return MEMORY_KIND if value == MEMORY_CLASS else value


def tools() -> list[ToolMap]:
    return [
        ToolMap(
            "remember_about_user",
            "remember_about",
            "Remember a fact about the user (the same in every project). Search first.",
            _remember_schema(project=False),
            _remember("user"),
            present=_remembered,
            output=NotariumRemembered,
        ),
        ToolMap(
            "remember_about_project",
            "remember_about",
            "Remember a fact about a project. Search first.",
            _remember_schema(project=True),
            _remember("project"),
            present=_remembered,
            output=NotariumRemembered,
        ),
        ToolMap(
            "search",
            "search",
            "Ranked fragments, each with its path (/m/<id>): use it before writing.",
            schema(
                {
                    "query": prop("string", "What to look for."),
                    "project": _PROJECT,
                    "class": prop(
                        "string",
                        f"Only this kind; '{MEMORY_CLASS}' is the memory written by"
                        " remember_about_user and remember_about_project.",
                    ),
                    "limit": prop("integer", "1-100.", minimum=1, maximum=100),
                },
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a["query"],
                    "scope": _project_scope(a),
                    "kind": _class(a.get("class")),
                    "limit": a.get("limit", 20),
                }
            ),
            read_only=True,
            present=_with_paths,
        ),
        ToolMap(
            "recall",
            "context",
            "A context pack for a topic within a token budget: with a project, that project's"
            " notes and memory and what is known about the user (a token limited to scopes"
            " reads those it reaches; scopes_out_of_reach names the others).",
            schema(
                _both(
                    {
                        "query": prop("string", "The topic."),
                        "project": _PROJECT,
                        "budget_tokens": prop("integer", "Default 4000.", minimum=1),
                        "depth": prop("integer", "0-3, default 1.", minimum=0, maximum=3),
                        "max_per_source": prop("integer", "Cap per note, in tokens.", minimum=1),
                    }
                ),
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a["query"],
                    "scope": None if a.get("project") is None else [_project_scope(a), "user"],
                    "budget_tokens": _spelled(a, "budget_tokens"),
                    "depth": a.get("depth"),
                    "max_per_source": _spelled(a, "max_per_source"),
                }
            ),
            read_only=True,
            scopes_of_its_own=_always,
        ),
        ToolMap(
            "edit_note",
            "edit",
            "Edit a note: append, prepend, replace, replace_section, find_replace (operation and"
            " content together).",
            schema(
                _both(
                    {
                        "ref": prop("integer", "The note id."),
                        "operation": prop(
                            "string",
                            "The operation.",
                            enum=[*OPERATIONS, CAMEL["replace_section"], CAMEL["find_replace"]],
                        ),
                        "content": prop("string", "The text."),
                        "section": prop("string", "The heading."),
                        "find": prop("string", "The unique text to replace."),
                        "version_token": prop("string", "The token you last read."),
                    }
                ),
                ["ref"],
            ),
            lambda a: drop_none(
                {
                    "id": a["ref"],
                    "operation": _operation(a.get("operation")),
                    "content": a.get("content"),
                    "section": a.get("section"),
                    "find": a.get("find"),
                    "version_token": _spelled(a, "version_token"),
                }
            ),
        ),
        ToolMap(
            "get_note",
            "get",
            "A note, whole.",
            schema({"ref": prop("integer", "The note id.")}, ["ref"]),
            lambda a: {"id": a["ref"]},
            read_only=True,
        ),
        ToolMap(
            "recent_activity",
            "journal",
            "What changed lately, by whom: per revision its kind (write, edit, external,"
            " restore, delete, merge, ...), the principal and the characters added and removed.",
            schema(
                {
                    "project": _PROJECT,
                    "since": prop("string", "ISO 8601."),
                    "limit": prop("integer", "At most this many."),
                }
            ),
            lambda a: drop_none(
                {"scope": _project_scope(a), "since": a.get("since"), "limit": a.get("limit")}
            ),
            read_only=True,
        ),
        ToolMap(
            "create_note",
            "save",
            "Create a shared note in a project (not memory); its title must be new there.",
            schema(
                {
                    "title": prop("string", "Title."),
                    "content": prop("string", "Body."),
                    "project": _PROJECT,
                },
                ["title", "content"],
            ),
            lambda a: drop_none(
                {
                    "title": a["title"],
                    "content": a["content"],
                    "scope": _project_scope(a),
                    "unique_title": True,
                }
            ),
        ),
        ToolMap(
            "link",
            "link",
            "Link two notes.",
            schema(
                {
                    "from": prop("integer", "From note id."),
                    "to": prop("integer", "To note id."),
                    "type": prop("string", "Link type."),
                },
                ["from", "to"],
            ),
            lambda a: drop_none({"from_id": a["from"], "to_id": a["to"], "type": a.get("type")}),
        ),
    ]
