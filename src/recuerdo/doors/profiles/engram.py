"""The Engram profile: mem_* tools with Engram's parameters, plus mem_history and mem_revision
(our extensions: Engram loses the text an upsert replaces, we keep every revision)."""

from __future__ import annotations

from typing import Any

from ...profiles.engram_scopes import (
    engram_scope,
    observation_key,
    project_name,
    recorded_project,
)
from . import ToolMap, drop_none, prop, schema

INSTRUCTIONS = """
Engram tools, with these extensions:
- mem_history(id) lists every revision of an observation (a topic_key upsert keeps the text it
  replaces): version, revision_id, operation, who and when.
- mem_revision(id, version | revision_id) reads one revision whole, e.g. the conflict revision
  a stale expected_version kept aside (mem_save names it as conflict_revision_id).
- mem_restore(id) brings back a soft-deleted observation.
- mem_save(expected_version=N) refuses to overwrite an observation that moved past version N:
  nothing is lost, both texts are kept and named. Read, merge, then save the whole document."""

_PROJECT = prop("string", "The project (default 'default'); names are trimmed and lower-cased.")
_SCOPE = prop("string", "'project' (default) or 'personal'.", enum=["project", "personal"])
# A read naming a project and no scope reads both (decisions 0167, 0172, 0173): said where used
_SEARCH_SCOPE = prop(
    "string",
    "'project' or 'personal'. Left out: a project's observations and its personal ones when a"
    " project is given (a token limited to scopes reads those it reaches; the reply's"
    " scopes_out_of_reach names the others), else every scope.",
    enum=["project", "personal"],
)
_CONTEXT_SCOPE = prop(
    "string",
    "'project' or 'personal'. Left out: a project's observations and its personal ones when a"
    " project is given (a token limited to scopes reads those it reaches; the reply's"
    " scopes_out_of_reach names the others), else the default project's.",
    enum=["project", "personal"],
)
_PROMPT_TITLE_CHARS = 60


def project_of(args: dict[str, Any]) -> str | None:
    """The project as Engram matches it: trimmed and lower-cased, so that "ShopAPI" and
    " shopapi " are one project (the same mapping the Engram importer uses)."""
    return project_name(args.get("project"))


def scope_of(args: dict[str, Any]) -> str:
    return engram_scope(args.get("project"), args.get("scope"))


def _capture(args: dict[str, Any]) -> dict[str, Any]:
    """Engram's capture names a session, not a project: its learnings are the session's
    project's (the verb files them in the session's scope when none is given). The default
    project here sent them to project:default, whatever project the session was started for."""
    by_session = args.get("session_id") is not None and project_of(args) is None
    return drop_none(
        {
            "text": args["content"],
            "session": args.get("session_id"),
            "source": args.get("source"),
            "scope": None if by_session else scope_of(args),
        }
    )


def read_project(args: dict[str, Any]) -> str | None:
    """The project a read of personal observations keeps to: Engram filters by project and
    scope, so another project's personal observations are left out (decision 0148). A read
    naming no project reads every project's, as Engram's does."""
    return project_of(args) if args.get("scope") in ("personal", None) else None


def search_scopes(args: dict[str, Any]) -> str | list[str] | None:
    """The scopes a search reads. Engram filters the scope only when one is given: a search
    of project A alone reads A's observations and A's personal ones (``read_project`` keeps
    out the other projects' personal ones), where it read A's project scope alone (0148 left
    it; decision 0167). A blank project is none, as Engram trims it: read as one, it read
    ``user`` with no project to keep to, every project's personal observations."""
    if args.get("scope"):
        return scope_of(args)
    if project_of(args):
        return [scope_of(args), "user"]
    return None


def context_scopes(args: dict[str, Any]) -> str | list[str]:
    """The scopes mem_context reads: as a search's (``search_scopes``), A's project scope and
    A's personal observations for a project named alone (decision 0172, where 0167 left it
    reading A's project scope alone); with neither project nor scope, the default project's
    scope, as before (a blank project is none, as in a search)."""
    if project_of(args) and not args.get("scope"):
        return [scope_of(args), "user"]
    return scope_of(args)


def named_no_scope(args: dict[str, Any]) -> bool:
    """Whether a read's scopes are the door's own choice: a project named with no scope reads
    two (``search_scopes``, ``context_scopes``), of which a token limited to scopes reads those
    it reaches (decision 0173)."""
    return not args.get("scope")


def _save(args: dict[str, Any]) -> dict[str, Any]:
    """A topic key is Engram's within (project, scope): a personal one is keyed with its
    project, and the note its topic key alone named before is taken over (decision 0138); its
    project is recorded on the note, keyed or not, for the reads to keep to (0148)."""
    key, former = observation_key(args.get("project"), args.get("scope"), args.get("topic_key"))
    return drop_none(
        {
            "title": args.get("title"),
            "content": args.get("content"),
            "kind": args.get("type"),
            "scope": scope_of(args),
            "key": key,
            "former_key": former,
            "session": args.get("session_id"),
            "expected_version": args.get("expected_version"),
            "project": recorded_project(args.get("project"), args.get("scope")),
        }
    )


def _prompt_title(content: Any) -> str:
    """A prompt is stored as a note titled by its first words."""
    first = content.strip().split("\n", 1)[0] if isinstance(content, str) else ""
    if len(first) > _PROMPT_TITLE_CHARS:
        first = first[:_PROMPT_TITLE_CHARS].rsplit(" ", 1)[0] + "..."
    return f"Prompt: {first}" if first else "Prompt"


def tools() -> list[ToolMap]:
    return [
        ToolMap(
            "mem_save",
            "save",
            "Save an observation. With topic_key it updates that topic's observation; "
            "the earlier text stays as a revision.",
            schema(
                {
                    "title": prop("string", "A short, specific title."),
                    "content": prop("string", "The whole observation."),
                    "type": prop(
                        "string",
                        "decision, architecture, bugfix, pattern, config,"
                        " discovery, learning, preference, manual, ...",
                    ),
                    "scope": _SCOPE,
                    "topic_key": prop("string", "A stable topic key."),
                    "project": _PROJECT,
                    "session_id": prop("string", "The session."),
                    "capture_prompt": prop(
                        "boolean",
                        "Accepted for compatibility (prompts are saved by mem_save_prompt).",
                    ),
                    "expected_version": prop(
                        "integer",
                        "The version you read: if the observation moved on, nothing is"
                        " overwritten and both versions are kept (conflict).",
                        minimum=1,
                    ),
                },
                ["title", "content"],
            ),
            _save,
        ),
        ToolMap(
            "mem_update",
            "edit",
            "Change an observation's title and/or content by id (the earlier text is kept as a"
            " revision).",
            schema(
                {
                    "id": prop("integer", "The observation id."),
                    "title": prop("string", "The new title."),
                    "content": prop("string", "The new content (the whole observation)."),
                },
                ["id"],
            ),
            lambda a: drop_none(
                {
                    "id": a["id"],
                    "operation": None if a.get("content") is None else "replace",
                    "content": a.get("content"),
                    "title": a.get("title"),
                }
            ),
        ),
        ToolMap(
            "mem_delete",
            "delete",
            "Delete an observation (soft unless hard_delete).",
            schema(
                {
                    "id": prop("integer", "The observation id."),
                    "hard_delete": prop("boolean", "Remove for good."),
                },
                ["id"],
            ),
            lambda a: {"id": a["id"], "hard": bool(a.get("hard_delete", False))},
            destructive=True,
        ),
        ToolMap(
            "mem_restore",
            "restore",
            "Bring back a soft-deleted observation (extension): a save based on it is refused"
            " while it is deleted.",
            schema({"id": prop("integer", "The observation id.")}, ["id"]),
            lambda a: {"id": a["id"]},
        ),
        ToolMap(
            "mem_search",
            "search",
            "Search observations: previews marked truncated; use "
            "mem_get_observation for the whole text.",
            schema(
                {
                    "query": prop("string", "What to look for."),
                    "type": prop("string", "Only this type."),
                    "project": _PROJECT,
                    "scope": _SEARCH_SCOPE,
                    # Engram's limit is 10 by default, at most 20: a larger one reads 20
                    # (the mapping caps it), as Engram does, rather than refusing the call.
                    "limit": prop(
                        "integer", "How many (default 10); at most 20: more reads 20.", minimum=1
                    ),
                    "match_mode": prop("string", "'any' or 'all'.", enum=["any", "all"]),
                },
                ["query"],
            ),
            lambda a: drop_none(
                {
                    "query": a.get("query"),
                    "kind": a.get("type"),
                    "scope": search_scopes(a),
                    "limit": min(int(a.get("limit") or 10), 20),
                    "mode": a.get("match_mode"),
                    "project": read_project(a),
                }
            ),
            read_only=True,
            scopes_of_its_own=named_no_scope,
        ),
        ToolMap(
            "mem_get_observation",
            "get",
            "The whole observation, never truncated.",
            schema({"id": prop("integer", "The observation id.")}, ["id"]),
            lambda a: {"id": a["id"]},
            read_only=True,
        ),
        ToolMap(
            "mem_context",
            "recent",
            "Recent context for a session start: pinned observations first (flagged pinned), "
            "then a named context set if given, then the latest.",
            schema(
                {
                    "project": _PROJECT,
                    "scope": _CONTEXT_SCOPE,
                    "max_bytes": prop("integer", "Size limit (cap 65536)."),
                    "context_set": prop(
                        "string", "A named context set to load after the pins (extension)."
                    ),
                }
            ),
            lambda a: drop_none(
                {
                    "scope": context_scopes(a),
                    "max_bytes": a.get("max_bytes"),
                    "context_set_name": a.get("context_set"),
                    "project": read_project(a),
                }
            ),
            read_only=True,
            scopes_of_its_own=named_no_scope,
        ),
        ToolMap(
            "mem_timeline",
            "timeline",
            "Neighbours of an observation in its session.",
            schema(
                {
                    "observation_id": prop("integer", "The observation id."),
                    "before": prop("integer", "How many before."),
                    "after": prop("integer", "How many after."),
                },
                ["observation_id"],
            ),
            lambda a: drop_none(
                {"id": a["observation_id"], "before": a.get("before"), "after": a.get("after")}
            ),
            read_only=True,
        ),
        ToolMap(
            "mem_session_start",
            "session_start",
            "Start a session.",
            schema(
                {
                    "id": prop("string", "The session id."),
                    "project": _PROJECT,
                    "directory": prop("string", "The working directory."),
                },
                ["id"],
            ),
            lambda a: drop_none(
                {"id": a["id"], "project": project_of(a), "directory": a.get("directory")}
            ),
        ),
        ToolMap(
            "mem_session_end",
            "session_end",
            "End a session with its summary.",
            schema(
                {
                    "id": prop("string", "The session id."),
                    "summary": prop("string", "What happened."),
                },
                ["id"],
            ),
            lambda a: drop_none({"id": a["id"], "summary": a.get("summary")}),
        ),
        ToolMap(
            "mem_session_summary",
            "session_end",
            "Record a session's summary.",
            schema(
                {
                    "session_id": prop("string", "The session id."),
                    "content": prop("string", "The summary."),
                },
                ["session_id", "content"],
            ),
            lambda a: {"id": a["session_id"], "summary": a["content"]},
        ),
        ToolMap(
            "mem_capture_passive",
            "capture_passive",
            "Save the learnings of a text's last 'Key Learnings' section.",
            schema(
                {
                    "content": prop("string", "The text."),
                    "session_id": prop("string", "The session."),
                    "source": prop("string", "Who wrote it."),
                    "project": prop(
                        "string",
                        "The project (default: the session's project; 'default' without a "
                        "session); names are trimmed and lower-cased.",
                    ),
                },
                ["content"],
            ),
            _capture,
        ),
        ToolMap(
            "mem_suggest_topic_key",
            "suggest_key",
            "Suggest a stable topic key.",
            schema(
                {
                    "type": prop("string", "The type."),
                    "title": prop("string", "Title."),
                    "content": prop("string", "Content."),
                },
                ["type", "title"],
            ),
            lambda a: drop_none(
                {"kind": a["type"], "title": a["title"], "content": a.get("content")}
            ),
            read_only=True,
        ),
        ToolMap(
            "mem_review",
            "review",
            "List observations due for review, or mark one reviewed.",
            schema(
                {
                    "action": prop(
                        "string", "list or mark_reviewed.", enum=["list", "mark_reviewed"]
                    ),
                    "observation_id": prop("integer", "For mark_reviewed."),
                    "project": _PROJECT,
                    "limit": prop("integer", "At most this many."),
                }
            ),
            lambda a: drop_none(
                {
                    "action": a.get("action", "list"),
                    "id": a.get("observation_id"),
                    "scope": scope_of(a) if a.get("project") else None,
                    "limit": a.get("limit"),
                }
            ),
        ),
        ToolMap(
            "mem_save_prompt",
            "save",
            "Save the user's prompt, so later sessions see what was asked (mem_context, "
            "mem_search).",
            schema(
                {
                    "content": prop("string", "The prompt, as the user wrote it."),
                    "session_id": prop("string", "The session."),
                    "project": _PROJECT,
                },
                ["content"],
            ),
            lambda a: drop_none(
                {
                    "title": _prompt_title(a.get("content")),
                    "content": a.get("content"),
                    "kind": "prompt",
                    "scope": scope_of(a),
                    "session": a.get("session_id"),
                }
            ),
        ),
        ToolMap(
            "mem_history",
            "history",
            "Every revision of an observation, oldest first (extension): version (null for a"
            " conflict kept aside, a deletion or a restore), revision_id, operation, who, when.",
            schema({"id": prop("integer", "The observation id.")}, ["id"]),
            lambda a: {"id": a["id"]},
            read_only=True,
        ),
        ToolMap(
            "mem_revision",
            "revision",
            "One revision of an observation, whole (extension): by version, or by revision_id"
            " (from mem_history, or the conflict_revision_id a conflict names).",
            schema(
                {
                    "id": prop("integer", "The observation id."),
                    "version": prop("integer", "The version number.", minimum=1),
                    "revision_id": prop("integer", "The revision id, instead of version."),
                },
                ["id"],
            ),
            lambda a: drop_none(
                {"id": a["id"], "version": a.get("version"), "revision_id": a.get("revision_id")}
            ),
            read_only=True,
        ),
    ]
