"""Credentials the review of decision 0157 found stored in clear.

- A netrc line's password glued to a key's END or BEGIN marker: in the text as sent, the
  marker's spaces ended the value before the line's end, and the password was kept (the rules
  in turn read it with the marker in its place).
- A netrc line ending in ``\\r\\n`` (a file saved on Windows): ``$`` does not match before
  ``\\r``, so the line's password was never taken."""

from __future__ import annotations

import pytest

import recuerdo
from recuerdo.core.secrets import redact, redact_call, redact_whole

END = "-----END PRIVATE KEY-----"
BEGIN = "-----BEGIN PRIVATE KEY-----"
BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

# (text, a credential that was stored in clear)
LEAKS = {
    "netrc_into_end": (f"password Pa55!{END}", "Pa55"),
    "netrc_into_rsa_end": (f"password Pa55!{END.replace('PRIV', 'RSA PRIV')}abc9", "Pa55"),
    "netrc_into_begin": (f"password Pa55!{BEGIN}\n{BODY}\n{END}", "Pa55"),
    "netrc_login_into_end_then_text": (f"login bob password Pa55!{END}abc9", "abc9"),
    "netrc_crlf": ("machine h\r\npassword hunter2\r\nmachine g\r\n", "hunter2"),
    "netrc_crlf_last": ("password hunter2\r\n", "hunter2"),
    "netrc_cr": ("password hunter2\rmachine g", "hunter2"),
}


@pytest.mark.parametrize(("text", "leak"), LEAKS.values(), ids=LEAKS)
def test_the_credential_is_redacted(text: str, leak: str) -> None:
    assert leak not in redact(text).text
    assert leak not in redact_whole(text).text
    assert leak not in redact_call({"content": text})["content"]
    once = redact(text).text
    assert redact(once).text == once


@pytest.mark.parametrize(
    "text",
    [
        "password hunter2 is what we used\r\n",  # prose: not a netrc line
        "password =\r\n\r\nWe rotated it.\r\n",
        "password -----END of the notes\r\n",
    ],
)
def test_prose_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(("text", "leak"), LEAKS.values(), ids=LEAKS)
def test_save_stores_no_part_of_it(memory: recuerdo.Memory, text: str, leak: str) -> None:
    note = memory.save("ops", text)["id"]
    assert leak not in memory.get(note)["content"]
