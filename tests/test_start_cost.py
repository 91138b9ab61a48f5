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
    done = run_python(PROBE)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["heavy"] == []
    assert seen["built"] == []
    assert seen["after"] == ["remember"]
