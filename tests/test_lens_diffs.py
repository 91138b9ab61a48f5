"""The lens's diffs are bounded and worked out off the event loop (decision 0092): a note whose
two versions make difflib's matcher cubic is shown with its changed part replaced whole, said
so on the page, and while that page is being made the server keeps answering."""

from __future__ import annotations

import difflib
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from recuerdo.doors.web import render

from .conftest import Server


def adversarial(lines: int) -> tuple[str, str]:
    """Two texts of ``lines`` lines, each line repeated just under difflib's "popular" bound,
    the second the first reversed: the matcher's worst case (14,000 lines: ~40 s)."""
    distinct = lines // 100 - 1
    first = [str(i % distinct) for i in range(lines)]
    return "\n".join(first), "\n".join(reversed(first))


def test_a_long_changed_middle_is_shown_whole_and_said_to_be_simplified() -> None:
    old, new = adversarial(14_000)
    shown = render.diff(old, new)
    assert shown.simplified
    kinds = [line.kind for line in shown.lines]
    assert kinds.count("removed") == kinds.count("added") == 14_000  # no line left out
    assert [line.text for line in shown.lines if line.kind == "added"] == new.splitlines()


def test_the_bound_counts_what_changed_not_the_notes_length() -> None:
    body = [f"line {i}" for i in range(10_000)]
    edited = [*body[:5_000], "a new line", *body[5_000:]]
    shown = render.diff("\n".join(body), "\n".join(edited))
    assert not shown.simplified
    assert [(line.kind, line.text) for line in shown.lines] == [
        ("hunk", "@@ -4998,6 +4998,7 @@"),
        *[("same", f"line {i}") for i in range(4_997, 5_000)],
        ("added", "a new line"),
        *[("same", f"line {i}") for i in range(5_000, 5_003)],
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        ("a", "a"),
        ("", "a\nb"),
        ("a\nb", ""),
        ("a\nb\nc\nd\ne\nf\ng\nh\ni\nj", "a\nb\nX\nd\ne\nf\ng\nh\nY\nj"),
        ("\n".join("abcdefghijklmnop"), "\n".join("abXdefghijklmnoZ")),
        ("one\ntwo\nthree", "zero\none\ntwo\nthree\nfour"),
    ],
)
def test_short_diffs_are_difflibs_unified_diff(old: str, new: str) -> None:
    expected = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="")
        if not line.startswith(("---", "+++"))
    ]
    marks = {"hunk": "", "same": " ", "added": "+", "removed": "-"}
    shown = render.diff(old, new)
    assert not shown.simplified
    assert [marks[line.kind] + line.text for line in shown.lines] == expected


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=600) as response:
        return response.status, response.read().decode()


def test_the_page_of_a_diff_bomb_answers_and_the_server_answers_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")  # meaning is not what this looks at
    server = Server(tmp_path / "state", memory="main")
    try:
        first, second = adversarial(14_000)
        for content in (first, second):
            status, saved = server.post(
                "/v1/save", {"title": "bomb", "content": content, "key": "b"}
            )
            assert status == 200, saved
        stale = {"title": "bomb", "content": first + "\nx", "key": "b", "expected_version": 1}
        status, refused = server.post("/v1/save", stale)
        assert status == 409, refused  # refused, and kept as a conflict revision
        note = saved["id"]  # type: ignore[index]

        page: dict[str, object] = {}

        def view() -> None:
            page["started"] = time.monotonic()
            page["reply"] = get(f"{server.url}/m/{note}?memory=main")
            page["done"] = time.monotonic()

        viewer = threading.Thread(target=view)
        viewer.start()
        answered: list[tuple[float, float]] = []  # (sent, answered) of each /health
        while viewer.is_alive():
            sent = time.monotonic()
            assert get(f"{server.url}/health")[0] == 200
            answered.append((sent, time.monotonic()))
        viewer.join()

        status, html = page["reply"]  # type: ignore[misc]
        assert status == 200
        assert "Simplified: the changed part is too long" in html
        assert html.count("<ins>") >= 14_000  # the versions compared, every line shown
        # Ordering, not speed: some /health was both sent and answered in the middle third of
        # the page's making. A page worked out on the event loop answers nothing meanwhile.
        start, done = page["started"], page["done"]
        assert isinstance(start, float) and isinstance(done, float)
        third = (done - start) / 3
        middle = [a for a in answered if a[0] >= start + third and a[1] <= done - third]
        assert middle, (done - start, answered[:5], answered[-5:])
    finally:
        server.stop()


def test_a_middle_the_review_found_slow_is_simplified() -> None:
    """2,000 lines of 50 symbols against their first 1,000 interleaved with another line took
    1.77 s under the first bound (2,000 lines): the review of 0092."""
    current = [f"s{i % 50}" for i in range(2_000)]
    other = [line for pair in zip(current[:1_000], ["F"] * 1_000, strict=True) for line in pair]
    assert render.diff("\n".join(current), "\n".join(other)).simplified
    small = render.diff("\n".join(current[:400]), "\n".join(other[:400]))
    assert not small.simplified  # what an edit changes is still matched line by line


def test_only_the_newest_conflicts_are_compared_on_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each stale save is one more conflict, each diffed against the note: 20 of a 7.6 KB note
    rendered for 37 s (the review of 0092). The newest five are compared; the rest listed."""
    monkeypatch.setenv("RECUERDO_EMBEDDER", "none")
    server = Server(tmp_path / "state", memory="main")
    try:
        status, saved = server.post("/v1/save", {"title": "n", "content": "v1", "key": "k"})
        server.post("/v1/save", {"title": "n", "content": "v2", "key": "k"})
        for n in range(8):
            stale = {"title": "n", "content": f"stale {n}", "key": "k", "expected_version": 1}
            assert server.post("/v1/save", stale)[0] == 409
        status, html = get(f"{server.url}/m/{saved['id']}?memory=main")  # type: ignore[index]
        assert status == 200
        assert html.count("<h3>Conflict revision ") == 8  # every conflict is named
        assert html.count("Not compared here") == 3
        assert html.count('class="side-by-side"') == 5
        assert all(f"stale {n}" in html for n in range(3, 8))  # the newest, side by side
    finally:
        server.stop()
