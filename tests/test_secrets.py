"""The secret guard: what it catches, that it is idempotent, and that every path uses it."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.core import secret_assignments, secret_rules, secrets
from recuerdo.core.secrets import apply_rules, redact, redact_call, redact_text

OPENAI = "sk-proj-" + "Ab3" * 10
CASES = [
    (f"use {OPENAI} for prod", "use secret(API) for prod", "API"),
    ("aws AKIA" + "ABCDEFGHIJKLMNOP" + " key", "aws secret(API) key", "API"),
    ("gh token ghp_" + "x" * 36, "gh token secret(API)", "API"),
    ("Authorization: Bearer abc.def-ghi_jkl012", "Authorization: Bearer secret(TOKEN)", "TOKEN"),
    ("password=hunter2 ok", "password=secret(PASSWORD) ok", "PASSWORD"),
    ('api_key: "s3cr3t value"', "api_key: secret(PASSWORD)", "PASSWORD"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- tail",
        "secret(PRIVATE_KEY) tail",
        "PRIVATE_KEY",
    ),
    # Without its END marker: the rest of the text, whatever shape its body has (decision 0080).
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAA\n" * 3
        + "AAtzc2gtZWQ=\n\n## Rollback\nRedeploy the tag.",
        "secret(PRIVATE_KEY)",
        "PRIVATE_KEY",
    ),
    (
        "the key file must start with -----BEGIN RSA PRIVATE KEY----- or ssh refuses it",
        "the key file must start with secret(PRIVATE_KEY)",
        "PRIVATE_KEY",
    ),
    (
        "% -----BEGIN RSA PRIVATE KEY-----\n% Proc-Type: 4,ENCRYPTED\n\n"
        "% MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n% Ws7U8Lf2JEnWGqI=",
        "% secret(PRIVATE_KEY)",
        "PRIVATE_KEY",
    ),
]


_MARK = "-----BEGIN RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            f"{_MARK}\nMIIB\n-----END RSA PRIVATE KEY-----\n\nkeep\n\n{_MARK} cut\n\nnot kept",
            "secret(PRIVATE_KEY)\n\nkeep\n\nsecret(PRIVATE_KEY)",
        ),
        (  # another kind's END marker ends no key
            f"{_MARK} cut\n\n-----END CERTIFICATE-----",
            "secret(PRIVATE_KEY)",
        ),
        (f"{_MARK}\nA\n-----END RSA PRIVATE KEY----- kept " * 3, "secret(PRIVATE_KEY) kept " * 3),
        (  # a marker that begins inside the dashes ending the block before it (the review's)
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----BEGIN PRIVATE KEY"
            "-----BEGIN PRIVATE KEY-----\nswordfish\n",
            "secret(PRIVATE_KEY)BEGIN PRIVATE KEYsecret(PRIVATE_KEY)",
        ),
    ],
)
def test_private_key_markers_in_one_text_are_each_their_own_block(raw: str, expected: str) -> None:
    """The blocks are found in one pass (the third review: a form of the rule that stopped
    before the end of the text made each marker read the rest of it for an END marker, 1.3 s
    for 100 KB of markers)."""
    assert redact(raw).text == expected
    assert apply_rules(raw).text == expected


_FORWARD_TAIL = re.compile(
    r"(?:[A-Za-z0-9+/=]{16,}[ \t]*\r?\n)*[A-Za-z0-9+/=]*[ \t]*\r?\n?"
    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
)
"""The tail rule as a forward search, as it was: the reference on short texts (on long base64
runs it took minutes, the third review)."""
_TAIL_PIECES = (
    "AAAAA|Ab3+/=|MIIEowIBAAKCAQEAu1SU1LfVLPHC|\n|\r\n| |\t|x y|-----END RSA PRIVATE KEY-----"
    "|-----END PRIVATE KEY-----|-----END CERTIFICATE-----|é|\n\n"
)


def _texts_of(pieces: str, max_size: int) -> st.SearchStrategy[str]:
    """Texts joined from ``pieces`` (one string, ``|`` between them)."""
    return st.lists(st.sampled_from(pieces.split("|")), max_size=max_size).map("".join)


@given(_texts_of(_TAIL_PIECES, 14))
def test_a_keys_tail_read_backwards_is_what_the_forward_rule_found(text: str) -> None:
    read_backwards = [found.span() for found in secret_rules._PRIVATE_KEY_TAIL.finditer(text)]
    assert read_backwards == [found.span() for found in _FORWARD_TAIL.finditer(text)]


_URL_PIECES = "http|s|://|user|:|pa55|@|host|/| |a-|.|+|_|é|x|9|\n|?|#|secret(|ftp|::|@@"
_URL_AS_SEARCHED = re.compile(
    r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@?#]*:)(?!secret\()([^\s@/?#]+)(@)"
)
"""The URL password rule as a search, as it was: the reference on short texts (on a long
dotted or hyphenated run it took seconds, the review's)."""


@given(_texts_of(_URL_PIECES, 16))
def test_a_url_password_found_from_its_sign_is_what_the_search_found(text: str) -> None:
    def parts(matches: Iterator[re.Match[str]]) -> list[tuple[tuple[int, int], ...]]:
        return [tuple(m.span(group) for group in range(4)) for m in matches]

    assert parts(secret_rules._URL_PASSWORD.finditer(text)) == parts(
        _URL_AS_SEARCHED.finditer(text)
    )


_ASSIGNMENT_PIECES = (
    "ab|.|_|-|key|KEY|password|api_key|=|:| |'|\"|x9Kq2LmN8pR4sT6vW0yZ1aB3|token|\n|,|=>|é"
)


@given(_texts_of(_ASSIGNMENT_PIECES, 16))
def test_an_assignment_starts_where_its_name_does(text: str) -> None:
    """An assignment's name is matched only from the start of its run of name characters (the
    third review: from every ``.``, ``_`` or ``-`` inside a run, each start read the run to its
    end: 7.3 s for 30 KB of ``ab.`` before " key=1"). Each match starts there anyway: the same
    text is redacted as with the pattern that tried every start."""
    for rule in (secret_assignments.STRONG_ASSIGNMENT, secret_assignments.KEY_ASSIGNMENT):
        every_start = re.compile(
            rule.pattern.replace("(?<![A-Za-z0-9_.-])", "(?<![A-Za-z0-9])", 1), rule.flags
        )
        assert every_start.pattern != rule.pattern
        assert rule.sub("S", text) == every_start.sub("S", text)


@pytest.mark.parametrize(("raw", "expected", "kind"), CASES)
def test_known_credentials_are_redacted(raw: str, expected: str, kind: str) -> None:
    result = redact(raw)
    assert result.text == expected
    assert kind in result.found
    assert redact_text(result.text) == result.text  # idempotent


@pytest.mark.parametrize(
    "harmless",
    ["The API is slow on Mondays", "sketch-book", "a passage about keys", "token economy"],
)
def test_ordinary_text_is_untouched(harmless: str) -> None:
    assert redact(harmless) == (harmless, ())


_QUICK_ALPHABET = list("sk-_AKIaghp=:\"' Bearerpasswordtokn0123456789x\n\r\xa0")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(_QUICK_ALPHABET)))
def test_the_quick_check_never_changes_the_result(text: str) -> None:
    assert redact(text).text == apply_rules(text).text
    assert redact_text(redact_text(text)) == redact_text(text)


# Pieces of every kind of credential the rules know, of their cues and near misses, in both
# cases and with the letters that match ASCII ones when case is ignored (long s, dotless i,
# Kelvin sign): strung together, they reach every rule, its cue, its quick form and the quick
# check.
PIECES = [
    *("password", "PASSWORD", "pa\u017f\u017fword", "passwd", "pwd", "passphrase", "secret"),
    *("\u017fecret", "token", "Token", "credentials", "credent\u0131al", "api_key", "apiKEY"),
    *("CREDENT\u0130AL", "\u0130", "\u0131"),
    *("\u212aey", "key", "login", "ab", "@host", "://", "://user:", "https", "hunter2"),
    *("=", ":", "=>", ":=", " = ", ": ", '"', "'", " ", "\n", "\t", ".", "(", "$VAR", "x" * 3),
    *("\r\n", "\r", "\xa0", "\n\n", "a b"),
    *("aws_", "my.", "-", "_", "client", "secret(API)", "\u212a", "KEY"),
    *("Bearer ", "Basic ", "sk-proj-", "AKIA", "ghp_", "hf_", "SG.", "eyJ", "_live_"),
    *(
        "Ab3" * 8,
        "0123456789" * 2,
        "AbCdEf0123456789xyzQ" * 2 + "Ab1",
        "8f14e45f-ceea-467f-a0e6-0123456789ab",
    ),
    *(
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "PRIVATE KEY",
        "-----END ",
    ),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
def test_the_cues_never_change_the_result(text: str) -> None:
    assert redact(text) == apply_rules(text)


@pytest.mark.parametrize(
    "disguised",
    [
        "pa\u017f\u017fword = hunter2",
        "\u017fecret: hunter2",
        "credent\u0131als = hunter2",
        "CREDENT\u0130ALS: hunter2",
    ],
)
def test_a_letter_that_only_matches_when_case_is_ignored_does_not_hide_a_password(
    disguised: str,
) -> None:
    """The password rules ignore case, and so match the long s (U+017F), the dotless i (U+0131)
    and the dotted capital I (U+0130) as s and i; the quick check once lower-cased the text
    and missed them."""
    result = redact(disguised)
    assert "hunter2" not in result.text
    assert result == apply_rules(disguised)
    assert result.found == ("PASSWORD",)


def test_every_write_path_redacts(memory: recuerdo.Memory) -> None:
    memory.remember("learning", f"key {OPENAI}", [OPENAI])
    memory.remember_many([{"category": "rule", "content": f"also {OPENAI}"}])
    memory.create_progress("deploy", ["push"])
    memory.complete_step("deploy", "push", f"pushed with {OPENAI}")
    memory.create_progress("rotate", ["old"])
    memory.fail_step("rotate", "old", f"rejected password=hunter2 and {OPENAI}")
    memory.add_rule("no_keys", "must", f"never paste {OPENAI}; limit <= 3")
    everything = repr(
        [
            memory.recall(),
            memory.get_progress("deploy"),
            memory.get_progress("rotate"),
            memory.get_rules(),
            memory.summary(),
        ]
    )
    assert OPENAI not in everything and "hunter2" not in everything
    assert everything.count("secret(API)") >= 6


def test_the_retrieval_audit_keeps_queries_redacted(file_memory: recuerdo.Memory) -> None:
    file_memory.remember("learning", "rotate the deploy key")
    file_memory.search(f"deploy key {OPENAI}")
    file_memory.recall(search=f"password=hunter2 {OPENAI}")
    file_memory.context(f"what about {OPENAI}")
    log = file_memory.audit()  # flushes the buffered records to disk
    assert len(log) == 3 and all("secret(" in repr(r) for r in log)
    # the database, its WAL and shared memory: wherever the flushed records may sit
    on_disk = b"".join(p.read_bytes() for p in Path(file_memory.location).parent.glob("*"))
    assert OPENAI.encode() not in on_disk and b"hunter2" not in on_disk


def _every_string_redacted(value: Any, marked: bool) -> Any:
    """What ``redact_call`` promises, written out: each string of the call (keys and the
    members of sets too) redacted as it would be sent alone (:func:`redact`), or, when any
    string anywhere holds a key marker, as a piece of a key (:func:`redact_piece`, whose cuts
    are checked on their own elsewhere): what is checked here is which strings of a call each
    is applied to."""
    if isinstance(value, str):
        return (secrets.redact_piece(value) if marked else redact(value)).text
    if isinstance(value, dict):
        return {
            _every_string_redacted(k, marked): _every_string_redacted(v, marked)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(_every_string_redacted(item, marked) for item in value)
    return value


def _strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for k, v in value.items() for text in _strings_of(k) + _strings_of(v)]
    if isinstance(value, list | tuple | set | frozenset):
        return [text for item in value for text in _strings_of(item)]
    return []


def _holds_mark(value: Any) -> bool:
    if isinstance(value, str):
        return secrets._MARKER.search(value) is not None
    if isinstance(value, dict):
        return any(_holds_mark(k) or _holds_mark(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_mark(item) for item in value)
    return False


_TEXTS = st.lists(
    st.sampled_from(
        [*PIECES, "MIIBOgIBAAJBAKj34GkxFhD90vcNMIIBOgIBAAJBAKj34Gkx", "\n", "category", "tag"]
    ),
    max_size=6,
).map("".join)
_CALLS = st.recursive(
    _TEXTS | st.integers() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(_TEXTS, max_size=2)
        | st.dictionaries(_TEXTS, inner, max_size=3)
    ),
    max_leaves=8,
)


BODY = "MIIBOgIBAAJBAKj34GkxFhD90vcNMIIBOgIBAAJBAKj34Gkx"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["content", "title", "entries", "tags"]), _CALLS))
@example(  # keys that become one: the last one's value stays, as in one dict built at once
    {
        "entries": {
            "-----BEGIN RSA PRIVATE KEY-----": 1,
            BODY: 2,
            "-----END RSA PRIVATE KEY-----": 3,
        }
    }
)
@example(  # a body line's characters glued to a word in another string: no line to cut
    {
        "content": "credent\u0131alAbCdEf0123456789xyzQAbCdEf0123456789xyzQAb1",
        "title": (
            "AbCdEf0123456789xyzQAbCdEf0123456789xyzQAb1",
            "-----BEGIN RSA PRIVATE KEY-----",
        ),
    }
)
@example(  # a body line as sent that a rule reads as an assignment (0178)
    {
        "content": (
            ["-----BEGIN RSA PRIVATE KEY-----"],
            "password=AbCdEf0123456789xyzQAbCdEf0123456789xyzQAb1",
        )
    }
)
def test_a_call_is_redacted_string_by_string_twice_alike(arguments: dict[str, Any]) -> None:
    """Every string of a call is redacted, and every key body line when a marker is anywhere
    in the call, however the call nests; a second call with the same arguments (its short
    clean strings now known) gives the same answer."""
    marked = _holds_mark(arguments)
    expected = {name: _every_string_redacted(value, marked) for name, value in arguments.items()}
    assert redact_call(arguments) == expected
    found: dict[str, list[str]] = {}
    assert redact_call(arguments, found) == expected
    # Each argument with a string the guard changed is reported, with the kinds it replaced
    # (each once); no other argument is.
    expected_found = {name: _kinds(value, marked) for name, value in arguments.items()}
    assert {name: set(kinds) for name, kinds in found.items()} == {
        name: kinds for name, kinds in expected_found.items() if kinds
    }
    assert all(len(kinds) == len(set(kinds)) for kinds in found.values())
    if marked:  # the guard's own definition of a body line, applied to what it kept
        # (as lines: the same characters glued to a word are no key's line, and the guard
        # keeps them, as a fresh-clone run drew: "credentıal" and 43 base64 characters)
        kept = _strings_of(redact_call(arguments))
        assert not any(secrets.BODY_RUN.search(text) for text in kept)


@pytest.mark.parametrize("before", ["password=", "token: ", "api_key=", ""])
def test_a_body_line_holding_an_assignment_is_cut_whole_beside_a_marker(before: str) -> None:
    """Beside a key's BEGIN line, ``password=`` and 43 base64 characters is read as sent
    (decision 0157): the whole line is a body line (``=`` is base64), so it is cut whole and
    named a key. The property test's model redacted first and then looked for body lines,
    leaving ``password=secret(PASSWORD)``: it failed on this call in a local run (0178)."""
    line = before + "AbCdEf0123456789xyzQAbCdEf0123456789xyzQAb1"
    found: dict[str, list[str]] = {}
    call = {"content": (["-----BEGIN RSA PRIVATE KEY-----"], line)}
    cleaned = redact_call(call, found)
    if secrets.BODY_RUN.fullmatch(line):
        assert cleaned["content"][1] == "secret(PRIVATE_KEY)"
        assert found == {"content": ["PRIVATE_KEY"]}
    else:  # a space breaks the line as a body line: the rule's own cut stays
        assert "AbCdEf0123" not in cleaned["content"][1]
        assert cleaned["content"][1].startswith(before)
    assert redact_call(call) == cleaned


def _kinds(value: Any, marked: bool) -> set[str]:
    """The kinds of secret ``redact_call`` replaces in ``value`` (as
    :func:`_every_string_redacted` redacts it)."""
    if isinstance(value, str):
        return set((secrets.redact_piece(value) if marked else redact(value)).found)
    if isinstance(value, dict):
        return set().union(*(_kinds(k, marked) | _kinds(v, marked) for k, v in value.items()))
    if isinstance(value, list | tuple | set | frozenset):
        return set().union(*(_kinds(item, marked) for item in value))
    return set()


def test_a_short_clean_string_is_redacted_once_and_a_secret_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Categories, tags and keys come back in every call of a bulk load, and in every entry of
    one: once found clean they are not redacted again (they were a third of the guard's cost;
    the first call redacted them once an entry, 0188). A string that held a credential is never
    taken as known: it is redacted every time."""
    seen: list[str] = []
    real = secrets.redact

    def counted(text: str) -> secrets.Redaction:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(secrets, "redact", counted)
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", set())  # none known yet
    secret = "password = hunter2"
    for _ in range(3):
        entry = {"category": "decision", "tags": ["topic-x9"], "content": secret}
        assert redact_call({"entries": [entry, entry]}) == {
            "entries": [
                {
                    "category": "decision",
                    "tags": ["topic-x9"],
                    "content": "password = secret(PASSWORD)",
                }
            ]
            * 2
        }
    assert seen.count(secret) == 6
    for known in ("decision", "topic-x9", "category"):
        assert seen.count(known) == 1, known


def test_a_key_in_pieces_leaves_nothing_known_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key's body line is left as it is by ``redact`` and cut only because the call holds a
    marker: it must not be kept as a string known clean (it would stay in the process)."""
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", set())
    lines = [BODY[:32] + "Ab12" * 8, "Zy98" * 16]  # 64 characters each, as PEM lines are
    call = {
        "entries": [
            {"category": "context", "content": "-----BEGIN RSA PRIVATE KEY-----"},
            *({"category": "context", "content": line} for line in lines),
            {"category": "context", "content": "-----END RSA PRIVATE KEY-----"},
        ]
    }
    cleaned = redact_call(call)
    assert [entry["content"] for entry in cleaned["entries"]] == ["secret(PRIVATE_KEY)"] * 4
    assert not set(lines) & secrets._CLEAN_SHORT
    assert redact_call({"entries": [{"content": lines[0]}]}) == {"entries": [{"content": lines[0]}]}
    assert lines[0] in secrets._CLEAN_SHORT  # alone, it is no key: kept as it is, and known


class _AnyText(str):
    """A text that says it equals (and hashes as) any known string."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("tag")


def test_a_string_subclass_is_never_taken_as_known_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", set())
    assert redact_call({"tags": ["tag"]}) == {"tags": ["tag"]}
    cleaned = redact_call({"content": _AnyText("password = hunter2")})
    assert str.__str__(cleaned["content"]) == "password = secret(PASSWORD)"


@pytest.mark.parametrize("already", [0, 5])
def test_the_strings_known_clean_stay_within_their_cap(
    monkeypatch: pytest.MonkeyPatch, already: int
) -> None:
    """However many short strings a call holds, and however many are known before it, the set
    never grows past its cap; the call is redacted all the same."""
    monkeypatch.setattr(secrets, "_CLEAN_SHORT_CAP", 8)
    monkeypatch.setattr(secrets, "_CLEAN_SHORT", {f"known {i}" for i in range(already)})
    tags = [f"tag {i}" for i in range(20)]
    cleaned = redact_call({"tags": tags, "content": "token: hunter2"})
    assert cleaned == {"tags": tags, "content": "token: secret(PASSWORD)"}
    assert 0 < len(secrets._CLEAN_SHORT) <= 8


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Basic authentication is weak", "Basic authentication is weak"),
        ("the Token authentication bot", "the Token authentication bot"),
        ("Bearer Abcdefghijklmnop", "Bearer secret(TOKEN)"),
        ("Basic dXNlcjpwYXNz", "Basic secret(TOKEN)"),  # base64 of user:pass, no digit in it
        ("Bearer abc.def-ghi_jkl012", "Bearer secret(TOKEN)"),
        ("Bearer tokens/refresh.md", "Bearer secret(TOKEN)"),
    ],
)
def test_a_word_of_lower_case_letters_after_bearer_basic_or_token_is_prose(
    text: str, expected: str
) -> None:
    """Any word of 12 letters or more after one of them was taken for a token: a note on
    "Basic authentication" lost its second word (the review of decision 0086)."""
    assert redact(text).text == expected
    assert apply_rules(text).text == expected


@pytest.mark.parametrize("breaks", ["\n\n", "\r\n\r\n", "\r\r", "\n  \n", "\n\n\n"])
def test_a_sign_at_a_paragraphs_end_takes_no_value_from_the_next_one(breaks: str) -> None:
    """An assignment's sign that ends a paragraph ("password =", a heading of prose, a name
    whose value was left out) took the next paragraph's first word as its value: "Rotate"
    became ``secret(PASSWORD)``, and the paragraph lost its first word. A value alone on its
    line past the blank line still is one (``test_redacted_replies``: an appended value)."""
    text = f"The old password ={breaks}Rotate it every quarter."
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("password:\n  hunter2", "password:\n  secret(PASSWORD)"),  # YAML: on the next line
        ("password =\r\nhunter2", "password =\r\nsecret(PASSWORD)"),
        ("db_password = hunter2\n\nNext", "db_password = secret(PASSWORD)\n\nNext"),
        ("password:\n\nhunter2hunter2\n", "password:\n\nsecret(PASSWORD)\n"),
        ("password:\n\nhunter2  # rotated", "password:\n\nsecret(PASSWORD)  # rotated"),
        ("password:\r\n\r\nP@ss (prod)", "password:\r\n\r\nsecret(PASSWORD) (prod)"),
        ("password:\r\n\r\n  hunter2hunter2", "password:\r\n\r\n  secret(PASSWORD)"),
    ],
)
def test_a_value_on_the_signs_line_or_the_next_is_still_redacted(raw: str, expected: str) -> None:
    assert redact_text(raw) == expected


@pytest.mark.parametrize("space", ["\xa0", "\u3000", "\f", "\v", " \xa0 "])
def test_a_value_after_any_space_on_the_signs_line_is_redacted(space: str) -> None:
    """After the sign, only spaces and tabs were crossed (0152): a value after a no-break
    space, as text copied from a page has it, was left in clear. Any space but a line break is
    crossed, as before 0152."""
    for raw in (f"password:{space}hunter2", f"api_key={space}x9Kq2LmN8pR4sT6vW0yZ1aB3"):
        assert "secret(" in redact_text(raw), raw
    assert redact_text(f"password:\n\n{space}hunter2") == f"password:\n\n{space}secret(PASSWORD)"


@pytest.mark.parametrize(
    "raw",
    ['password:\n\n"correct horse battery"', '{"password":\r\n\r\n  "s3cr3t value",\n "x": 1}'],
)
def test_a_quoted_value_alone_past_a_blank_line_is_redacted(raw: str) -> None:
    """A quoted value is one value, spaces and all: past a blank line it stands alone on its
    line, and was left in clear (only a value without a space was taken)."""
    assert "secret(PASSWORD)" in redact_text(raw)
    assert "horse" not in redact_text(raw) and "s3cr3t" not in redact_text(raw)


def test_a_run_of_crlf_breaks_after_a_sign_is_read_in_linear_time() -> None:
    """Each "\\r\\n" could be read as one break or two: 22 of them before prose took 10 s
    (the look-ahead for a value alone on its line failed, and every reading was tried)."""
    started = time.perf_counter()
    text = "password:" + "\r\n" * 40_000 + "rotate it every quarter"
    assert redact_text(text) == text
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "db:\n  password: |\n    hunter2\n    second line\n  user: bob\n",
            "db:\n  password: |\n    secret(PASSWORD)\n  user: bob\n",
        ),
        (
            "api_token: >-\n  abc123\n\n  def456\nnext: 1",
            "api_token: >-\n  secret(PASSWORD)\nnext: 1",
        ),
        (
            "secret: |2 # note\r\n   s3cr3t\r\nnext: x",
            "secret: |2 # note\r\n   secret(PASSWORD)\r\nnext: x",
        ),
        ("password: |\n\n  hunter2\n", "password: |\n\n  secret(PASSWORD)\n"),
        ("password: |\nnext: x", "password: |\nnext: x"),  # an empty block: nothing to hide
    ],
)
def test_a_yaml_block_scalar_of_a_secret_name_is_redacted_whole(raw: str, expected: str) -> None:
    """``password: |`` over an indented block: the ``|`` was taken as the value, and the
    block, the credential itself, stayed in clear (decision 0152's review)."""
    assert redact_text(raw) == expected
    assert redact_text(expected) == expected  # idempotent
