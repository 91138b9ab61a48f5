"""Progress plans: named tasks of ordered steps that a restarted program resumes from.

Plans belong to the memory as a whole (one plan board), not to a writer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.clock import now_iso, parse_iso
from ..core.text import checked_label, checked_text, shown_on_one_line
from ..errors import InvalidInput, StepNotFound, TaskNotFound
from ..model import Plan, PlanSummary, Step
from ..store.base import Row, Tx

MAX_STEPS = 1000
MAX_NOTE_BYTES = 16_384
_FINISHED = ("done", "skipped")
_MARKS = {"done": "OK", "in_progress": ">>", "failed": "XX", "skipped": "--", "pending": "  "}


def _check_steps(steps: object) -> list[str]:
    if steps is None:
        return []
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise InvalidInput("steps must be a list of step names")
    if len(steps) > MAX_STEPS:  # before each is read: a million names were all checked first
        raise InvalidInput(f"a task has at most {MAX_STEPS} steps, got {len(steps)}")
    names = [checked_label(step, "step name") for step in steps]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput(f"step names must be unique within a task; repeated: {repeated}")
    return names


def _plan_id(tx: Tx, tenant: str, task: str) -> int | None:
    found = tx.scalar("SELECT id FROM plans WHERE tenant = ? AND task = ?", (tenant, task))
    return None if found is None else int(found)


def _require_plan(tx: Tx, tenant: str, task: object) -> tuple[int, str]:
    name = checked_label(task, "task")
    plan_id = _plan_id(tx, tenant, name)
    if plan_id is None:
        raise TaskNotFound(f"No task {name!r} tracked")
    return plan_id, name


def _steps(tx: Tx, tenant: str, plan_id: int) -> list[Step]:
    rows = tx.all(
        "SELECT name, status, result, error, started_at, finished_at, duration_ms"
        " FROM plan_steps WHERE tenant = ? AND plan_id = ? ORDER BY position",
        (tenant, plan_id),
    )
    return [_row_to_step(row) for row in rows]


def _row_to_step(row: Row) -> Step:
    return {
        "name": row["name"],
        "status": row["status"],
        "result": row["result"],
        "error": row["error"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "duration_ms": row["duration_ms"],
    }


def percent_of(steps: Sequence[Step]) -> int:
    if not steps:
        return 100
    finished = sum(1 for step in steps if step["status"] in _FINISHED)
    return finished * 100 // len(steps)


def resume_of(steps: Sequence[Step]) -> str | None:
    for step in steps:
        if step["status"] in ("in_progress", "failed"):
            return step["name"]
    for step in steps:
        if step["status"] == "pending":
            return step["name"]
    return None


def create(tx: Tx, tenant: str, task: object, steps: object) -> Plan:
    name = checked_label(task, "task")
    names = _check_steps(steps)
    plan_id = _plan_id(tx, tenant, name)
    if plan_id is not None:
        if percent_of(_steps(tx, tenant, plan_id)) < 100:
            return get(tx, tenant, name)  # an unfinished plan is resumed, never reset
        tx.execute("DELETE FROM plans WHERE tenant = ? AND id = ?", (tenant, plan_id))
    stamp = now_iso()
    plan_id = int(
        tx.scalar(
            "INSERT INTO plans (tenant, task, created_at, updated_at) VALUES (?, ?, ?, ?)"
            " RETURNING id",
            (tenant, name, stamp, stamp),
        )
    )
    tx.executemany(
        "INSERT INTO plan_steps (tenant, plan_id, position, name) VALUES (?, ?, ?, ?)",
        [(tenant, plan_id, position, step) for position, step in enumerate(names)],
    )
    return get(tx, tenant, name)


def get(tx: Tx, tenant: str, task: object) -> Plan:
    plan_id, name = _require_plan(tx, tenant, task)
    row = tx.one(
        "SELECT created_at, updated_at FROM plans WHERE tenant = ? AND id = ?", (tenant, plan_id)
    )
    assert row is not None
    steps = _steps(tx, tenant, plan_id)
    return {
        "task": name,
        "percent": percent_of(steps),
        "resume_point": resume_of(steps),
        "steps": steps,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def list_all(tx: Tx, tenant: str) -> list[PlanSummary]:
    summaries: list[PlanSummary] = []
    for row in tx.all(
        "/* whole memory */ SELECT id, task, updated_at FROM plans WHERE tenant = ?"
        " ORDER BY updated_at DESC, id DESC",
        (tenant,),
    ):
        steps = _steps(tx, tenant, row["id"])
        summaries.append(
            {
                "task": row["task"],
                "percent": percent_of(steps),
                "resume_point": resume_of(steps),
                "steps": len(steps),
                "updated_at": row["updated_at"],
            }
        )
    return summaries


def move(tx: Tx, tenant: str, task: object, step: object, status: str, note: object = None) -> Step:
    """Move one step to ``status`` (in_progress, done, failed or skipped)."""
    plan_id, task_name = _require_plan(tx, tenant, task)
    step_name = checked_label(step, "step")
    row = tx.one(
        "SELECT position, status, started_at FROM plan_steps"
        " WHERE tenant = ? AND plan_id = ? AND name = ?",
        (tenant, plan_id, step_name),
    )
    if row is None:
        raise StepNotFound(f"No step {step_name!r} in task {task_name!r}")
    field = "result" if status != "failed" else "error"
    if isinstance(note, bool) or not isinstance(note, str | int | float | None):
        # A number reads as its digits; bytes or a dict were kept as their repr (``b'x'``).
        raise InvalidInput(f"{field} must be text, got {type(note).__name__}")
    text = (
        None
        if note is None
        else checked_text(str(note), field, max_bytes=MAX_NOTE_BYTES, allow_blank=True)
    )
    stamp = now_iso()
    if status == row["status"] and status != "in_progress":
        return _again(tx, tenant, plan_id, row["position"], status, text, stamp)
    if status == "in_progress":
        tx.execute(
            "UPDATE plan_steps SET status = ?, started_at = ?, finished_at = NULL, error = NULL,"
            " duration_ms = 0 WHERE tenant = ? AND plan_id = ? AND position = ?",
            (status, stamp, tenant, plan_id, row["position"]),
        )
    else:
        started = row["started_at"]
        duration = 0
        if started is not None:
            delta = parse_iso(stamp) - parse_iso(started)
            duration = max(0, int(delta.total_seconds() * 1000))
        tx.execute(
            "UPDATE plan_steps SET status = ?, finished_at = ?, duration_ms = ?,"
            " result = CASE WHEN ? = 'failed' THEN result ELSE ? END,"
            " error = CASE WHEN ? = 'failed' THEN ? ELSE NULL END"
            " WHERE tenant = ? AND plan_id = ? AND position = ?",
            (
                status,
                stamp,
                duration,
                status,
                text,
                status,
                text,
                tenant,
                plan_id,
                row["position"],
            ),
        )
    tx.execute(
        "UPDATE plans SET updated_at = ? WHERE tenant = ? AND id = ?", (stamp, tenant, plan_id)
    )
    return _step_at(tx, tenant, plan_id, row["position"])


def _again(
    tx: Tx, tenant: str, plan_id: int, position: int, status: str, text: str | None, stamp: str
) -> Step:
    """A step marked again as it already is (done, skipped or failed): a retried call, say
    after a crash left the caller unsure it landed. Its finish time and duration stay (they
    stretched to the retry), and so does its result or error unless a new one is given (a
    second ``complete_step`` without a result erased the first's)."""
    if text is not None:
        column = "error" if status == "failed" else "result"
        tx.execute(
            f"UPDATE plan_steps SET {column} = ? WHERE tenant = ? AND plan_id = ? AND position = ?",
            (text, tenant, plan_id, position),
        )
        tx.execute(
            "UPDATE plans SET updated_at = ? WHERE tenant = ? AND id = ?", (stamp, tenant, plan_id)
        )
    return _step_at(tx, tenant, plan_id, position)


def _step_at(tx: Tx, tenant: str, plan_id: int, position: int) -> Step:
    fresh = tx.one(
        "SELECT name, status, result, error, started_at, finished_at, duration_ms"
        " FROM plan_steps WHERE tenant = ? AND plan_id = ? AND position = ?",
        (tenant, plan_id, position),
    )
    assert fresh is not None
    return _row_to_step(fresh)


def resume_point(tx: Tx, tenant: str, task: object) -> str | None:
    plan_id = _plan_id(tx, tenant, checked_label(task, "task"))
    return None if plan_id is None else resume_of(_steps(tx, tenant, plan_id))


def percent(tx: Tx, tenant: str, task: object) -> int:
    plan_id = _plan_id(tx, tenant, checked_label(task, "task"))
    return 0 if plan_id is None else percent_of(_steps(tx, tenant, plan_id))


def display(plan: Plan) -> str:
    lines = [f"Task: {shown_on_one_line(plan['task'])} ({plan['percent']}%)"]
    for step in plan["steps"]:
        line = f"  [{_MARKS[step['status']]}] {shown_on_one_line(step['name'])}"
        if step["duration_ms"]:
            line += f" ({step['duration_ms']}ms)"
        if step["result"] and step["status"] != "failed":
            line += f" -> {shown_on_one_line(step['result'])}"
        if step["status"] == "failed":
            line += f" ERROR: {shown_on_one_line(step['error'] or 'failed')}"
        lines.append(line)
    return "\n".join(lines)
