"""The strings the secret guard knows clean (decision 0188) never let a credential through: a
string is clean only as ``redact`` reads it alone, so a key's body line known clean from one
call is still cut in a call that holds a key marker, wherever it stands and however often."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from recuerdo.core import secrets
from recuerdo.core.secrets import redact, redact_call

# 64 characters each, as PEM body lines are; alone, ``redact`` leaves them as they are.
LINES = ["Qm9keUxpbmU" + "Ab12" * 13 + "x", "Zy98" * 16]
BEGIN = "-----BEGIN RSA PRIVATE KEY-----"
END = "-----END RSA PRIVATE KEY-----"
CUT = "secret(PRIVATE_KEY)"


class _Text(str):
    pass


def _known(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from no strings known, then make the body lines known clean."""
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", set())
    for line in LINES:
        assert redact(line).found == ()
        assert redact_call({"content": line, "tags": [line]}) == {"content": line, "tags": [line]}
        assert line in secrets._CLEAN_SHORT


def test_a_body_line_known_clean_is_cut_in_a_call_that_holds_a_marker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each line stands before the marker in the walk, twice (a second sight in the same call
    is known clean too), as a key, a tag, an object's value and a tuple's item."""
    _known(monkeypatch)
    first, second = LINES
    found: dict[str, list[str]] = {}
    cleaned = redact_call(
        {
            "tags": [first, first, second],
            "attributes": {first: second, "note": (second, first)},
            "content": "\n".join([BEGIN, *LINES, END]),
        },
        found,
    )
    assert cleaned["tags"] == [CUT] * 3
    assert cleaned["attributes"] == {
        CUT: CUT,
        "note": (CUT,) * 2,
    }
    assert cleaned["content"] == CUT
    assert set(found) == {"tags", "attributes", "content"}
    assert not any(line in repr(cleaned) for line in LINES)


@pytest.mark.parametrize(
    ("last", "cleaned_last"),
    [
        # The marker only in a subclass of str: it is read, never taken as known clean.
        (
            {"category": "context", "content": _Text(END), "tags": ["plain"]},
            {"category": "context", "content": CUT, "tags": ["plain"]},
        ),
        # The marker only in a tag.
        (
            {"category": "context", "content": "plain", "tags": [BEGIN]},
            {"category": "context", "content": "plain", "tags": [CUT]},
        ),
    ],
    ids=["in-a-str-subclass", "in-a-tag"],
)
def test_a_marker_after_strings_known_clean_in_a_batch_still_cuts_them(
    monkeypatch: pytest.MonkeyPatch, last: dict[str, Any], cleaned_last: dict[str, Any]
) -> None:
    """A bulk load: the lines come first in entries that repeat known keys, categories and
    tags; only the last entry holds the marker."""
    _known(monkeypatch)
    entries: list[dict[str, Any]] = [
        {"category": "context", "content": line, "tags": [line]} for line in LINES * 3
    ]
    cleaned = redact_call({"entries": [*entries, last]})
    for entry in cleaned["entries"][:-1]:
        assert entry["content"] == CUT
        assert entry["tags"] == [CUT]
    assert cleaned["entries"][-1] == cleaned_last


def test_calls_in_threads_sharing_the_known_strings_each_redact_as_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls with and without a marker, in threads, over the same strings: each gives what it
    gives run alone with nothing known."""
    plain = {"entries": [{"category": "context", "content": line} for line in LINES]}
    marked = {"entries": [*plain["entries"], {"category": "context", "content": BEGIN}]}
    # Alone: the plain call is kept as it is; in the marked one every line is the key's.
    expected = [plain, {"entries": [{"category": "context", "content": CUT}] * (len(LINES) + 1)}]
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", set())
    failures: list[object] = []

    def run() -> None:
        for _ in range(200):
            for call, wanted in zip((plain, marked), expected, strict=True):
                if (got := redact_call(call)) != wanted:
                    failures.append(got)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
