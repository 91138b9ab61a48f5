"""Reading order of a page set in columns: each column top-down, full-width lines between.

A PDF page holds lines at positions, not a reading order. Sorting them by height alone reads a
two-column page across the gutter, one line of each column in turn. Here a page's gutters are
found from where its lines sit across the page, and the lines are read column by column.

- Coverage: how many lines cover each x of the page (one sort of the lines' ends and a sweep).
  A gutter is an x-range crossed by at most half as many lines as the busiest x on its left and
  on its right: more lines sit beside it than across it. Of such a dip, the gutter is the part
  crossed least, so a column line that reaches into the gutter (ragged text, a long line nearly
  touching the next column) stays in its column.
- A line that crosses a gutter or sits inside one (a title, a figure caption or a footer across
  the columns; a page number centred under them) is a separator: it ends the columns above it,
  and columns start again below it. Every other line belongs to the column it starts in.
- Reading order: the columns of the band above the first separator, left to right, each
  top-down; the separator; the next band; and so on.

A page with no gutter comes back as ``None`` and is read as before. The cost is a sort of the
page's lines and a few linear passes: no pair of lines is ever compared.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Protocol, TypeVar

_MORE_BESIDE = 0.5  # a gutter is crossed by at most this share of the lines beside it
_MIN_GUTTER = 3.0  # points (about a space): a narrower dip is float noise, not white space


class _Box(Protocol):
    @property
    def x0(self) -> float: ...
    @property
    def x1(self) -> float: ...
    @property
    def y0(self) -> float: ...
    @property
    def y1(self) -> float: ...


B = TypeVar("B", bound=_Box)

SEPARATOR = 0  # the column number given to a full-width line; columns count from 1


def gutters(lines: Sequence[_Box]) -> list[tuple[float, float]]:
    """The x-ranges, left to right, that separate the columns of these lines (none: one)."""
    events = sorted([(line.x0, 1) for line in lines] + [(line.x1, -1) for line in lines])
    # Runs of the page's width with the number of lines covering each: (start, end, count).
    runs: list[tuple[float, float, int]] = []
    count = 0
    for (x, step), (after, _) in itertools.pairwise(events):
        count += step
        if after > x:
            runs.append((x, after, count))
    if len(runs) < 3:
        return []
    busiest_left = [0] * len(runs)  # the most lines over any x left of run i
    for i in range(1, len(runs)):
        busiest_left[i] = max(busiest_left[i - 1], runs[i - 1][2])
    busiest_right = [0] * len(runs)
    for i in range(len(runs) - 2, -1, -1):
        busiest_right[i] = max(busiest_right[i + 1], runs[i + 1][2])
    found: list[tuple[float, float]] = []
    dip: list[tuple[float, float, int]] = []
    for i, run in enumerate(runs):
        beside = min(busiest_left[i], busiest_right[i])
        if beside > 0 and run[2] <= _MORE_BESIDE * beside:
            dip.append(run)
            continue
        found += _least_crossed(dip)
        dip = []
    found += _least_crossed(dip)
    return found


def _least_crossed(dip: list[tuple[float, float, int]]) -> list[tuple[float, float]]:
    """The gutter of a dip: from the first to the last of its runs crossed by fewest lines."""
    if not dip:
        return []
    fewest = min(count for _, _, count in dip)
    least = [(start, end) for start, end, count in dip if count == fewest]
    start, end = least[0][0], least[-1][1]
    return [(start, end)] if end - start >= _MIN_GUTTER else []


def column_order(lines: Sequence[B]) -> list[tuple[B, int]] | None:
    """The lines in reading order, each with its column (``SEPARATOR`` for a full-width line),
    or ``None`` when the page is one column. Lines keep their given order within a column."""
    found = gutters(lines)
    if not found:
        return None
    starts = [start for start, _ in found]
    separators: list[B] = []
    placed: list[tuple[B, int]] = []  # a column line and its column
    for line in lines:
        after = bisect.bisect_right(starts, line.x0)  # gutters starting left of the line
        crosses = after < len(found) and found[after][1] < line.x1
        inside = after > 0 and line.x1 <= found[after - 1][1] and found[after - 1][0] <= line.x0
        if crosses or inside:
            separators.append(line)
        else:
            placed.append((line, after + 1))
    # Bands: the separators from the top down; a column line goes in the band below every
    # separator whose middle is higher than its own.
    separators.sort(key=lambda line: (-_middle(line), line.x0))
    depths = [-_middle(line) for line in separators]
    bands: list[dict[int, list[B]]] = [{} for _ in range(len(separators) + 1)]
    for line, column in placed:
        band = bisect.bisect_left(depths, -_middle(line))
        bands[band].setdefault(column, []).append(line)
    ordered: list[tuple[B, int]] = []
    for band, columns in enumerate(bands):
        for column in sorted(columns):
            ordered += [(line, column) for line in columns[column]]
        if band < len(separators):
            ordered.append((separators[band], SEPARATOR))
    return ordered


def _middle(line: _Box) -> float:
    return (line.y0 + line.y1) / 2
