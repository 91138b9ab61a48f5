"""Schemathesis against the running server's /openapi.json: no 500, responses match the schema.

(Schemathesis' own pytest plugin does not load under this pytest; its generation and checks are
driven here directly, a bounded number of examples per operation.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import Server

CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]


def test_api_holds_its_contract(tmp_path: Path) -> None:
    server = Server(tmp_path, memory="fuzz")
    failures: list[str] = []
    try:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 50

        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(
                max_examples=8,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                case.call_and_validate(checks=CHECKS)

            try:
                check()
            except Exception as error:  # collect every operation's failure, then report
                failures.append(f"{operation.label}: {str(error)[:600]}")
    finally:
        server.stop()
    assert not failures, "\n\n".join(failures)
