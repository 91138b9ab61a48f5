"""Credentials the review of decision 0157 found stored in clear.

- A netrc line's password glued to a key's END or BEGIN marker: in the text as sent, the
  marker's spaces ended the value before the line's end, and the password was kept (the rules
  in turn read it with the marker in its place).
- A netrc line ending in ``\\r\\n`` (a file saved on Windows): ``$`` does not match before
  ``\\r``, so the line's password was never taken.
- A chained assignment (``api_key: password = hunter2``, on main too): the first name took the
  second as its value, and matches do not overlap, so the second value was kept."""

from __future__ import annotations

import time

import pytest

import recuerdo
from recuerdo.core.secrets import redact

from .test_secret_overlaps import BEGIN, END, assert_no_road_keeps

BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

# (text, a credential that was stored in clear)
LEAKS = {
    "netrc_into_end": (f"password Pa55!{END}", "Pa55"),
    "netrc_into_rsa_end": (f"password Pa55!{END.replace('PRIV', 'RSA PRIV')}abc9", "Pa55"),
    "netrc_into_begin": (f"password Pa55!{BEGIN}\n{BODY}\n{END}", "Pa55"),
    "netrc_into_begin_then_text": (f"password Pa55!{BEGIN} x token=\n{BODY}", "Pa55"),
    "netrc_into_end_then_end": (f"password Pa55!{END}\t{END}\n", "Pa55"),
    "netrc_crlf": ("machine h\r\npassword hunter2\r\nmachine g\r\n", "hunter2"),
    "netrc_crlf_last": ("password hunter2\r\n", "hunter2"),
    "netrc_cr": ("password hunter2\rmachine g", "hunter2"),
    "chain_spaced": ("api_key: password = hunter2", "hunter2"),
    "chain_quoted": ('api_key: password="hunter2"', "hunter2"),
    "chain_next_line": ("token: passwd:\n  hunter2", "hunter2"),
    "chain_prose_name": ("password: secret = hunter2", "hunter2"),
    "chain_colon": ("api_key: pwd: Xy9abc", "Xy9abc"),
    "chain_of_three": ("a_token: b_token: c_token: hunter2", "hunter2"),
    "chain_of_key_names": ("foo_key: bar_key: 9a8b7c6d5e4f3a2b1c0d", "9a8b7c6d"),
    "chain_long_s": ("api_key: pa\u017f\u017fword = hunter2", "hunter2"),  # the rules ignore case
    # A value that ends in a secret name and a sign stays redacted as the first one's value
    "value_ending_in_a_name": ("aws_secret_access_key = Zx9Token=\nregion = x", "Zx9"),
}


def _stable_on_every_road(text: str, leak: str) -> str:
    """``leak`` is kept by no road, and a second redaction changes nothing: the text stored."""
    assert_no_road_keeps(text, leak)
    once = redact(text).text
    assert redact(once).text == once
    return once


@pytest.mark.parametrize(("text", "leak"), LEAKS.values(), ids=LEAKS)
def test_the_credential_is_redacted(text: str, leak: str) -> None:
    assert leak not in _stable_on_every_road(text, leak)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one value with a sign in it: taken whole, as before
        ("password=Secret=123", "password=secret(PASSWORD)"),
        ("api_key: password:=Zq9x", "api_key: secret(PASSWORD)"),
        ('secret: "token = abc"', "secret: secret(PASSWORD)"),
        # each value of a chain
        ("a_token: b_token: hunter2", "a_token: secret(PASSWORD) secret(PASSWORD)"),
        ("the password: token = self.token", "the password: secret(PASSWORD) = self.token"),
    ],
)
def test_a_value_holding_a_sign_is_taken_whole(text: str, expected: str) -> None:
    assert redact(text).text == expected


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


@pytest.mark.parametrize("link", ["a_token: ", "token:\n", "foo_key: ", "pwd = "])
def test_a_long_chain_is_read_in_linear_time(link: str) -> None:
    """Each link of a chain is followed from the value before it: followed again from every
    link the search met, 100 KB of them took minutes."""
    started = time.process_time()
    cleaned = redact(link * 12_000 + "9a8b7c6d5e4f3a2b1c0d").text
    assert "9a8b7c6d" not in cleaned
    assert time.process_time() - started < 2.0


# A value given to a marker (decision 0171): the name that made the first value a secret is
# before the marker, which now stands where a name stood.
GIVEN_TO_A_MARKER = {
    "sent_at_once": ("password = hunter1 = hunter2", "hunter2"),
    "sent_at_once_three": ("password = hunter1 = hunter2 = hunter3", "hunter3"),
    "stored_marker": ("The db password = secret(PASSWORD) = hunter2 for prod.", "hunter2"),
    "stored_marker_glued": ("api_key: secret(PASSWORD)=hunter2", "hunter2"),
    "after_a_run_of_markers": ("x = secret(PASSWORD)secret(PRIVATE_KEY) = hunter2", "hunter2"),
    "quoted": ('secret(TOKEN): "correct horse"', "correct horse"),
}


@pytest.mark.parametrize(("text", "leak"), GIVEN_TO_A_MARKER.values(), ids=GIVEN_TO_A_MARKER)
def test_a_value_given_to_a_marker_is_redacted(text: str, leak: str) -> None:
    _stable_on_every_road(text, leak)
    assert redact(text).found == ("PASSWORD",)


@pytest.mark.parametrize(
    "text",
    [
        "We stored secret(PASSWORD) and moved on.",
        "token = secret(PASSWORD) = self.token",  # code, as after a name
        "password = secret(PASSWORD)",
        "Secret(PASSWORD) = hunter2 is how the docs spell the call",  # not a marker's name
    ],
)
def test_a_marker_given_no_value_or_code_is_kept(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("saved", "operation", "content", "find"),
    [
        (
            "The db password = hunter1 for prod.",
            "find_replace",
            "secret(PASSWORD) = hunter2",
            "secret(PASSWORD)",
        ),
        (
            "The db password = hunter1 for prod.",
            "find_replace",
            " = hunter2 for prod.",
            " for prod.",
        ),
        ("The db password = hunter1", "append", "= hunter2", None),  # a paragraph of its own
    ],
)
def test_an_edit_giving_a_stored_marker_a_value_stores_none_of_it(
    memory: recuerdo.Memory, saved: str, operation: str, content: str, find: str | None
) -> None:
    note = memory.save("ops", saved)["id"]
    memory.edit(note, operation, content, find=find)
    stored = memory.get(note)["content"]
    assert "hunter2" not in stored
    assert stored.count("secret(PASSWORD)") == 2


# ``:=`` is a sign (Go's declaration, Pascal's assignment): read as ``:`` followed by a value
# ``=``, it made that ``=`` the secret and kept the value after it (review of 0171).
WALRUS = {
    "go": ('password := "hunter2"', "hunter2"),
    "plain": ("db_password := s3cr3tValue", "s3cr3tValue"),
    "given_to_a_marker": ("secret(PASSWORD) := hunter2", "hunter2"),
    "a_link_of_a_chain": ("password = hunter1 := hunter2", "hunter2"),
}


@pytest.mark.parametrize(("text", "leak"), WALRUS.values(), ids=WALRUS)
def test_a_value_given_by_colon_equals_is_redacted(text: str, leak: str) -> None:
    assert ":=" in _stable_on_every_road(text, leak)


@pytest.mark.parametrize(
    "text",
    [
        "password = hunter1 = hunter2 = hunter3 = hunter4 = hunter5 = hunter6",
        "secret(PASSWORD) = hunter1 = hunter2 = hunter3 = hunter4 = hunter5 = hunter6",
        "password: hunter1 = 'hunter2 x' = hunter3 = hunter4 => hunter5 := hunter6",
    ],
)
def test_every_link_of_a_long_chain_is_redacted_at_once(text: str) -> None:
    """Each round took one link past the first: the fifth was kept, and a second redaction
    (an edit's, of the text stored) changed the text again (review of 0171)."""
    assert_no_road_keeps(text, "hunter")
    once = redact(text).text
    assert redact(once).text == once


def test_a_long_chain_of_values_is_read_in_linear_time() -> None:
    started = time.process_time()
    cleaned = redact("password = a " + "=a " * 80_000 + "= hunter2").text
    assert "hunter2" not in cleaned
    assert time.process_time() - started < 2.0


def test_a_chain_stops_at_code() -> None:
    assert redact("password = hunter1 = hunter2 = cfg.value = hunter3").text == (
        "password = secret(PASSWORD) = secret(PASSWORD) = cfg.value = hunter3"
    )


@pytest.mark.parametrize(
    ("content", "find"),
    [
        (" := hunter2 for prod.", " for prod."),
        ("= hunter2 = hunter3 = hunter4 = hunter5 = hunter6 for", "for"),
    ],
    ids=["colon_equals", "five_links"],
)
def test_an_edit_giving_a_marker_a_chain_or_a_colon_equals_stores_none_of_it(
    memory: recuerdo.Memory, content: str, find: str
) -> None:
    note = memory.save("ops", "The db password = hunter1 for prod.")["id"]
    memory.edit(note, "find_replace", content, find=find)
    stored = memory.get(note)["content"]
    assert "hunter" not in stored
    assert redact(stored).text == stored


@pytest.mark.parametrize(
    "text",
    [
        "secret(TOKEN)=abcsecret(PASSWORD)=hunter2",
        "secret(TOKEN) = x.secret(PASSWORD) = hunter2",
        "password = a = b.secret(PASSWORD) = hunter2",
    ],
)
def test_a_value_running_into_a_marker_does_not_hide_the_value_given_to_it(text: str) -> None:
    """A value given to a marker ran on into the next marker's ``secret``, was read as code
    (a call follows), and the search went on past that marker (review of 0171)."""
    assert_no_road_keeps(text, "hunter2")
    once = redact(text).text
    assert redact(once).text == once
