"""The CLI's remote mode: ``recuerdo --server URL --token T <verb> ...`` runs a verb through the
HTTP API, so scripts work the same against a local file and a shared server."""

from __future__ import annotations

import base64
import functools
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, RecuerdoError, StoreError, all_error_classes
from ..model import EntryList, exact, whole_number
from ..verbs import Verb


class RemoteError(RecuerdoError):
    """An error the server answered with; ``code`` and ``status`` are the server's. It is also
    an instance of the local class of that code (:func:`remote_error`), so a caller that
    catches ``Conflict`` catches a server's conflict too."""

    carries_remote_code = True

    def __init__(self, code: str, status: int, detail: str, extra: dict[str, Any]) -> None:
        super().__init__(detail, **extra)
        self.code = code  # type: ignore[misc]
        self.status = status  # type: ignore[misc]


@functools.cache
def _remote_class(code: str) -> type[RemoteError]:
    local = next((cls for cls in all_error_classes() if cls.code == code), None)
    if local is None or local is RecuerdoError:
        return RemoteError
    return type(f"Remote{local.__name__}", (RemoteError, local), {})


def remote_error(code: str, status: int, detail: str, extra: dict[str, Any]) -> RemoteError:
    """The server's error as the local class of its code: ``mirror push`` through a server
    took a stale push's conflict for a failure (``except Conflict`` missed it), not for the
    two copies kept, and a busy server's store for a refusal, not for a push to queue."""
    return _remote_class(code)(code, status, detail, extra)


def request_body(body: Any) -> bytes:
    """``body`` as JSON, an exact decimal (how the CLI reads a JSON fraction) as the number it
    is: ``default=str`` sent it as a string, so ``0.25`` reached the server as ``"0.25"`` (an
    entity attribute typed string, a fact's attribute a string)."""
    return exact.dumps(body).encode()


def remote_call(
    server: str,
    token: str | None,
    memory: str | None,
    verb: Verb,
    arguments: dict[str, Any],
    timeout: float = 120,
) -> Any:
    try:
        address = urllib.parse.urlsplit(server)
        port = address.port  # a port that is not a number raises here
        reachable = address.scheme in ("http", "https") and bool(address.hostname)
        reachable = reachable and (port is None or port > 0)
    except ValueError:
        reachable = False
    if not reachable:
        # urllib's ValueError was a traceback, before anything was sent.
        raise InvalidInput(f"--server {server!r} is not an http:// or https:// URL")
    if verb.name == "ingest" and "path" in arguments:
        # The file is on this machine, not the server's: send its bytes.
        path = Path(str(arguments.pop("path")))
        if not path.is_file():
            raise InvalidInput(f"no file at {str(path)!r}")
        arguments["content_base64"] = base64.b64encode(path.read_bytes()).decode()
        arguments.setdefault("name", path.name)
    body = verb.params.model_validate(arguments).model_dump(by_alias=True, exclude_unset=True)
    query = "" if not memory else "?" + urllib.parse.urlencode({"memory": memory})
    request = urllib.request.Request(
        f"{server.rstrip('/')}/v1/{verb.name}{query}",
        method="POST",
        data=request_body(body),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {token}"} if token else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            try:
                # Fractions as the digits the server wrote (a fact's attributes keep them).
                result = exact.loads(response.read())
            except ValueError as error:  # another kind of server at that address
                raise StoreError(f"the server at {server} did not answer JSON") from error
            more = response.headers.get("X-Recuerdo-More")
            total = None if more is None else whole_number(more)
            if isinstance(result, list) and total is not None:
                return EntryList(result, total)  # the server cut the list: say how much
            return result
    except urllib.error.HTTPError as error:
        try:
            shape = json.loads(error.read())
        except ValueError:
            shape = None
        if not isinstance(shape, dict):  # a proxy's page, not our error shape
            shape = {"error": "internal", "detail": f"HTTP {error.code}"}
        extra = {k: v for k, v in shape.items() if k not in ("ok", "error", "detail")}
        raise remote_error(
            shape.get("error", "internal"), error.code, shape.get("detail", ""), extra
        ) from error
    except (urllib.error.URLError, OSError) as error:
        raise StoreError(f"cannot reach the server at {server}: {error}") from error
