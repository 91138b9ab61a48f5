"""Which span of a call's text a fact given with it cites (decision 0089).

A span supports a fact when it names both ends, each as whole words of the folded text
(``named_in``): the first sentence that does; else, in the first passage that does, the
shortest run of its sentences that does (the whole passage when a name spans a sentence
break, as "Dr. Smith" does); else, in a text cut here (``content``, not passages or turns the
caller gave), the shortest run across the cut between two passages (0145); else none, and the
fact cites its document with an empty span (``NOT_IN_TEXT``), which a read serves as ``span:
null``. A span naming one end only is never cited: it does not state the fact.

The text is split and folded once per call, and each piece is indexed by the words it holds,
so finding the pieces that name an end costs about the number of pieces holding its words,
not the size of the text, and a call's cost grows with its relations plus its text.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from functools import cached_property

from ..index.chunk import Span, sentence_spans
from ..store.base import Tx, groups, marks
from . import store

NOT_IN_TEXT = Span(0, 0)
"""The span cited when no passage names both ends: empty, so it can never be quoted."""


class _Pieces:
    """Spans of the text, folded once, indexed by their words; which of them name a name."""

    def __init__(self, text: str, spans: list[Span]) -> None:
        self.spans = spans
        self.folded = [store.fold(text[s.start : s.end]) for s in spans]
        self.words = [set(store.words(body)) for body in self.folded]
        self.holding: dict[str, list[int]] = {}  # word -> the pieces holding it, in order
        for index, words in enumerate(self.words):
            for word in words:
                self.holding.setdefault(word, []).append(index)
        self.found: dict[str, list[int]] = {}
        self.found_sets: dict[str, set[int]] = {}

    def naming(self, name: str) -> list[int]:
        """The pieces naming ``name`` (folded) as whole words, in order. Only the pieces
        holding its rarest word are read: a word every piece holds ("Acme" in "Acme 1", "Acme
        2", ...) would make each name cost the whole text again."""
        if name not in self.found:
            needed = set(store.words(name))
            if needed:
                rarest = min(needed, key=lambda word: len(self.holding.get(word, ())))
                candidates = [i for i in self.holding.get(rarest, ()) if needed <= self.words[i]]
            else:  # a name of punctuation alone has no word to look up
                candidates = list(range(len(self.spans)))
            self.found[name] = [i for i in candidates if named_in(name, self.folded[i])]
            self.found_sets[name] = set(self.found[name])
        return self.found[name]

    def first_naming_both(self, one: str, other: str) -> int | None:
        """The first piece naming both, looked for among the pieces of the rarer name."""
        self.naming(one)
        self.naming(other)
        few, many = sorted((self.found_sets[one], self.found_sets[other]), key=len)
        return min((i for i in few if i in many), default=None)


class Citer:
    """The spans a call's facts cite, from its text cut into ``passages``."""

    def __init__(self, text: str, passages: list[Span], *, across: bool = False) -> None:
        sentences: list[Span] = []
        self.first_sentence = []  # passage -> the index of its first sentence (and one past)
        for passage in passages:
            self.first_sentence.append(len(sentences))
            sentences += sentence_spans(text, passage)
        self.first_sentence.append(len(sentences))
        self.sentences = _Pieces(text, sentences)
        self.text, self.passage_spans = text, passages
        # Only a cut made here is crossed: passages and turns the caller gave are its units.
        self.across = across

    @cached_property
    def passages(self) -> _Pieces:
        """Read only when a fact's ends are in no one sentence."""
        return _Pieces(self.text, self.passage_spans)

    def span(self, source: str, target: str) -> Span:
        """The span the fact ``source -> target`` cites (``NOT_IN_TEXT`` when none)."""
        one, other = store.fold(source), store.fold(target)
        sentence = self.sentences.first_naming_both(one, other)
        if sentence is not None:
            return self.sentences.spans[sentence]
        passage = self.passages.first_naming_both(one, other)
        if passage is None:
            return self._across(one, other)
        low, high = self.first_sentence[passage], self.first_sentence[passage + 1]
        mine = []
        for name in (one, other):
            found = self.sentences.naming(name)
            mine.append(found[bisect_left(found, low) : bisect_left(found, high)])
        if not mine[0] or not mine[1]:
            return self.passages.spans[passage]
        first, last = _shortest_run(mine[0], mine[1])
        return Span(self.sentences.spans[first].start, self.sentences.spans[last].end)

    def _across(self, one: str, other: str) -> Span:
        """The shortest run of sentences naming both in the first two neighbouring passages
        of which one names an end and the other the other (no one passage names both here):
        where the text was cut must not decide whether it is cited; farther apart, none
        (0145). Looked for among the passages of the rarer name, as ``first_naming_both``."""
        if not self.across:
            return NOT_IN_TEXT
        self.passages.naming(one)
        self.passages.naming(other)
        few, many = sorted((self.passages.found_sets[n] for n in (one, other)), key=len)
        pairs = [p - 1 for p in few if p - 1 in many] + [p for p in few if p + 1 in many]
        if not pairs:
            return NOT_IN_TEXT
        low, high = self.first_sentence[min(pairs)], self.first_sentence[min(pairs) + 2]
        mine = []
        for name in (one, other):
            found = self.sentences.naming(name)
            mine.append(found[bisect_left(found, low) : bisect_left(found, high)])
        if not mine[0] or not mine[1]:  # a name found only across a sentence break
            return NOT_IN_TEXT
        first, last = _shortest_run(mine[0], mine[1])
        return Span(self.sentences.spans[first].start, self.sentences.spans[last].end)


def _shortest_run(first: list[int], second: list[int]) -> tuple[int, int]:
    """The shortest (earliest on a tie) range of indices holding one of each sorted list."""
    best: tuple[int, int] | None = None
    at = 0
    for index in first:
        while at + 1 < len(second) and second[at + 1] <= index:
            at += 1
        for other in second[at : at + 2]:  # the nearest on either side
            run = (min(index, other), max(index, other))
            if best is None or (run[1] - run[0], run[0]) < (best[1] - best[0], best[0]):
                best = run
    assert best is not None
    return best


def named_in(name: str, text: str) -> bool:
    r"""Whether ``name`` occurs in ``text`` with no word character just before or after it:
    what ``re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)`` answers, without compiling a
    pattern for each name (thousands of names can be candidates for one passage)."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not _is_word(text[at - 1])) and (
            end == len(text) or not _is_word(text[end])
        ):
            return True
        at = text.find(name, at + 1)
    return False


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # Python's \w on str patterns


def uncite(tx: Tx, tenant: str, doc_id: int, blanked: list[tuple[int, int]]) -> None:
    """Drop the citations of ``doc_id`` quoting any of the ``blanked`` spans: the text they
    quoted is forgotten. Their facts keep their other sources, else stand as asserted; left,
    such a citation was served as ``mismatch`` even beside a text still saying the fact, and
    an export carried its span of blanks, which an import then verified."""
    for start, stop in blanked:
        tx.execute(
            "DELETE FROM fact_sources WHERE tenant = ? AND item_id = ? AND start < ? AND stop > ?",
            (tenant, doc_id, stop, start),
        )


def live_passages(tx: Tx, tenant: str, doc_ids: set[int]) -> dict[int, list[tuple[int, int]]]:
    """Each document's live passages, ``(start, stop)`` in order (a forgotten one is gone)."""
    passages: dict[int, list[tuple[int, int]]] = {}
    for part in groups(sorted(doc_ids), 500):
        for row in tx.all(
            f"SELECT item_id, start, stop FROM chunks WHERE tenant = ? AND item_id IN"
            f" ({marks(part)}) ORDER BY item_id, start",
            (tenant, *part),
        ):
            passages.setdefault(int(row["item_id"]), []).append((row["start"], row["stop"]))
    return passages


def in_passages(passages: list[tuple[int, int]], start: int, stop: int) -> bool:
    """Whether a span lies in one passage or runs from it into the next (the citer cuts it
    so; ``passages`` in order): one reaching outside them quotes text a forget blanked (a
    citation left by a forget before 0145, or an export written then)."""
    at = bisect_right(passages, (start, sys.maxsize)) - 1
    if at < 0 or start >= passages[at][1]:
        return False
    return stop <= passages[at][1] or (
        at + 1 < len(passages) and passages[at + 1][0] < stop <= passages[at + 1][1]
    )
