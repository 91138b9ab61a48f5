"""The Notarium profile: its tool names and argument names over notes and retrieval."""

from __future__ import annotations

from typing import Any

from . import ToolMap, drop_none, prop, schema

_PROJECT = prop("string", "The project.")


def _project_scope(args: dict[str, Any]) -> str | None:
    project = args.get("project")
    return None if project is None else f"project:{project}"


def _remember(axis: str):  # type: ignore[no-untyped-def]
    def translate(a: dict[str, Any]) -> dict[str, Any]:
        return drop_none(
            {
                "axis": axis,
                "observation": a["observation"],
                "category": a.get("category"),
                "project": a.get("project"),
                "summary": a.get("summary"),
                "version_token": a.get("version_token"),
                "idempotency_key": a.get("idempotency_key"),
            }
        )

    return translate


def _remember_schema(project: bool) -> dict[str, Any]:
    properties = {
        "observation": prop("string", "The fact to remember."),
        "category": prop("string", "A label such as 'preferences'."),
        "summary": prop("string", "One line about the whole category."),
        "version_token": prop("string", "The token you last read."),
        "idempotency_key": prop("string", "Retries with this key are skipped."),
    }
    if project:
        properties = {"project": _PROJECT, **properties}
    return schema(properties, ["project", "observation"] if project else ["observation"])


def tools() -> list[ToolMap]:
    return [
        ToolMap(
            "remember_about_user",
            "remember_about",
            "Remember a fact about the user (the same in every project). Search first.",
            _remember_schema(project=False),
            _remember("user"),
        ),
        ToolMap(
            "remember_about_project",
            "remember_about",
            "Remember a fact about a project. Search first.",
            _remember_schema(project=True),
            _remember("project"),
        ),
        ToolMap(
            "search",
            "search",
            "Ranked fragments: use it before writing.",
            schema(
                {
                    "query": prop("string", "What to look for."),
                    "project": _PROJECT,
                    "class": prop("string", "Only this kind."),
                    "limit": prop("integer", "1-100.", minimum=1, maximum=100),
                },
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a["query"],
                    "scope": _project_scope(a),
                    "kind": a.get("class"),
                    "limit": a.get("limit", 20),
                }
            ),
            read_only=True,
        ),
        ToolMap(
            "recall",
            "context",
            "A context pack for a topic within a token budget.",
            schema(
                {
                    "query": prop("string", "The topic."),
                    "project": _PROJECT,
                    "budget_tokens": prop("integer", "Default 4000."),
                    "depth": prop("integer", "0-3, default 1."),
                    "max_per_source": prop("integer", "Cap per note, in tokens."),
                },
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a["query"],
                    "scope": _project_scope(a),
                    "budget_tokens": a.get("budget_tokens"),
                    "depth": a.get("depth"),
                    "max_per_source": a.get("max_per_source"),
                }
            ),
            read_only=True,
        ),
        ToolMap(
            "edit_note",
            "edit",
            "Edit a note: append, prepend, replace, replace_section, find_replace.",
            schema(
                {
                    "ref": prop("integer", "The note id."),
                    "operation": prop(
                        "string",
                        "The operation.",
                        enum=["append", "prepend", "replace", "replace_section", "find_replace"],
                    ),
                    "content": prop("string", "The text."),
                    "section": prop("string", "The heading."),
                    "find": prop("string", "The unique text to replace."),
                    "version_token": prop("string", "The token you last read."),
                },
                ["ref", "operation", "content"],
            ),
            lambda a: drop_none(
                {
                    "id": a["ref"],
                    "operation": a["operation"],
                    "content": a["content"],
                    "section": a.get("section"),
                    "find": a.get("find"),
                    "version_token": a.get("version_token"),
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
            "What changed lately, by whom.",
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
            "Create a shared note in a project (not memory).",
            schema(
                {
                    "title": prop("string", "Title."),
                    "content": prop("string", "Body."),
                    "project": _PROJECT,
                },
                ["title", "content"],
            ),
            lambda a: drop_none(
                {"title": a["title"], "content": a["content"], "scope": _project_scope(a)}
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
