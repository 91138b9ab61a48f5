"""The secret guard: credentials never reach the disk in clear.

Every write path passes user text through :func:`redact` before it is stored. A credential is
replaced by a marker naming its kind (``secret(API)``, ``secret(TOKEN)``,
``secret(PRIVATE_KEY)``, ``secret(PASSWORD)``), so the memory still says *that* a key was there
without keeping it. Redaction is idempotent: redacting redacted text changes nothing.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class _Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    keep_group: int  # how many leading groups to keep verbatim (a key name, "Bearer ")


_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.DOTALL,
)

# Provider key formats (prefixes and lengths as the providers publish them).
_API_KEYS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google
    r"|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"  # SendGrid
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # JWT
    r")"
)

_BEARER = re.compile(r"(\b(?:Bearer|Basic|Token)\s+)(?!secret\()[A-Za-z0-9._~+/=-]{12,}")

_ASSIGNMENT = re.compile(
    r"(\b(?:password|passwd|passphrase|client_secret|api[_-]?key|access[_-]?key"
    r"|secret[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|private[_-]?key)"
    r"[\"']?\s*[:=]\s*)"
    r"(?![\"']?secret\()(\"[^\"\n]+\"|'[^'\n]+'|[^\s,;\"']+)",
    re.IGNORECASE,
)

_RULES = (
    _Rule("PRIVATE_KEY", _PRIVATE_KEY, 0),
    _Rule("API", _API_KEYS, 0),
    _Rule("TOKEN", _BEARER, 1),
    _Rule("PASSWORD", _ASSIGNMENT, 1),
)


# Every rule needs one of these fragments (lower-cased); text with none of them skips the rules.
_TRIGGERS = re.compile(
    "|".join(
        re.escape(fragment)
        for fragment in (
            "private key",
            "sk-",
            "sk_",
            "rk_",
            "pk_",
            "akia",
            "asia",
            "agpa",
            "aida",
            "aroa",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "glpat-",
            "xox",
            "aiza",
            "hf_",
            "npm_",
            "sg.",
            "eyj",
            "bearer",
            "basic",
            "token",
            "pass",
            "secret",
            "key",
        )
    )
)


class Redaction(NamedTuple):
    text: str
    found: tuple[str, ...]  # the kinds of secret replaced, in order of the rules


def redact(text: str) -> Redaction:
    """Replace every credential in ``text`` with a ``secret(KIND)`` marker."""
    if _TRIGGERS.search(text.lower()) is None:
        return Redaction(text, ())
    return apply_rules(text)


def apply_rules(text: str) -> Redaction:
    """Every rule, without the quick pre-check (what :func:`redact` must always agree with)."""
    found: list[str] = []
    for rule in _RULES:
        marker = f"secret({rule.kind})"

        def replace(match: re.Match[str], marker: str = marker, keep: int = rule.keep_group) -> str:
            return (match.group(1) if keep else "") + marker

        text, count = rule.pattern.subn(replace, text)
        if count:
            found.append(rule.kind)
    return Redaction(text, tuple(found))


def redact_text(text: str) -> str:
    return redact(text).text
