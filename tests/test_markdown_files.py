"""The Markdown round trip: export-markdown writes one file per note, import-markdown reads
them back; no edits means no change, an edit is a revision by principal markdown, a stale edit
is a conflict revision (never an overwrite), and [[Title]] links survive."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recuerdo
from recuerdo.notes import markdown

from .forks import python_command, recuerdo_command
from .meanwhile import WritesMeanwhile
from .test_backup import deep_dump


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md"))


def _rows(memory: recuerdo.Memory, sql: str) -> list[tuple[object, ...]]:
    with memory._store.read() as tx:
        return [tuple(row) for row in tx.all(sql)]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def mem(base: Path) -> recuerdo.Memory:
    memory = recuerdo.open("notes", base_dir=base, embedder="none")
    yield memory  # type: ignore[misc]
    memory.close()


def test_files_go_in_folders_by_axis_and_scope(mem: recuerdo.Memory, tmp_path: Path) -> None:
    mem.save("Mine", "about me")
    mem.save("Checkout", "use stripe", scope="project:shop", key="odd/checkout", tags=["pay"])
    mem.save("Team rule", "reviews first", scope="team/core")
    report = mem.export_markdown(tmp_path / "out")
    assert report["notes"] == 3 and report["written"] == 3
    assert _files(tmp_path / "out") == [
        "other/team-core/Team rule.md",
        "project/shop/Checkout.md",
        "user/Mine.md",
    ]
    parsed = markdown.parse((tmp_path / "out/project/shop/Checkout.md").read_text())
    assert parsed.body == "use stripe"
    assert {k: parsed.fields[k] for k in ("key", "kind", "scope", "version", "tags")} == {
        "key": "odd/checkout",
        "kind": "manual",
        "scope": "project:shop",
        "version": 1,
        "tags": ["pay"],
    }


def test_two_notes_with_one_title_get_two_files(mem: recuerdo.Memory, tmp_path: Path) -> None:
    first = mem.save("Same", "one")["id"]
    second = mem.save("same", "two")["id"]
    mem.export_markdown(tmp_path)
    assert _files(tmp_path) == ["user/Same.md", f"user/same ({second}).md"]
    assert first < second


def test_a_title_that_holds_the_name_another_note_would_get_keeps_every_file(
    mem: recuerdo.Memory, tmp_path: Path
) -> None:
    """Found by a hunt: "Plan (3)" is the name the third "Plan" got, and one of the two files
    was written over the other (notes 3, written 3, two files)."""
    ids = [
        mem.save(title, text)["id"]
        for title, text in [("Plan (3)", "first"), ("Plan", "second"), ("Plan", "third")]
    ]
    assert ids == [1, 2, 3]
    report = mem.export_markdown(tmp_path)
    assert report["written"] == 3
    assert set(_files(tmp_path)) == {"user/Plan (3).md", "user/Plan.md", "user/Plan (3-2).md"}
    texts = sorted(
        path.read_text().rsplit("---\n", 1)[1].strip() for path in tmp_path.rglob("*.md")
    )
    assert texts == ["first", "second", "third"]


@pytest.mark.parametrize("elsewhere", [False, True])
def test_a_file_of_another_note_with_the_key_never_writes_over_this_one(
    mem: recuerdo.Memory, base: Path, tmp_path: Path, elsewhere: bool
) -> None:
    """Found by a hunt: the file's version was compared with the version of whichever note has
    its key, so an unedited file of a note deleted since (or of another memory's note) wrote
    its old text over the note now holding the key, as an edit. It is kept as a conflict."""
    old = mem.save("Auth design", "OLD", key="auth/design")["id"]
    mem.export_markdown(tmp_path)
    if elsewhere:
        target = recuerdo.open("other", base_dir=base, embedder="none")
    else:
        mem.delete(old)
        target = mem
    try:
        new = target.save("Auth design", "NEW", key="auth/design")
        assert new["version"] == 1 and (elsewhere or new["id"] != old)  # the same version
        report = target.import_markdown(tmp_path)
        assert report["conflicts"] == 1 and report["updated"] == 0
        assert target.get(new["id"])["content"] == "NEW"
        assert [c["content"] for c in target.conflicts(new["id"])] == ["OLD"]
        assert target.import_markdown(tmp_path)["conflicts"] == 1  # kept once
        assert len(target.conflicts(new["id"])) == 1
        # Once, also after the note moved on (the review: a copy an import).
        target.save("Auth design", "NEWER", key="auth/design")
        target.import_markdown(tmp_path)
        assert [c["content"] for c in target.conflicts(new["id"])] == ["OLD"]
    finally:
        if elsewhere:
            target.close()


@pytest.mark.parametrize("key", ["doc", None])
def test_a_file_of_a_note_deleted_since_makes_no_new_note(
    mem: recuerdo.Memory, tmp_path: Path, key: str | None
) -> None:
    """Reading the directory back made a new note of each file whose note was deleted since:
    every deletion undone unseen (the review of decision 0084). Skipped now, nothing stored;
    once the note is restored the file reads into it."""
    note = mem.save("Doc", "v1", key=key)["id"]
    mem.export_markdown(tmp_path)
    [path] = tmp_path.rglob("*.md")
    _edit(path, "v1", "v1 edited")
    mem.delete(note)
    report = mem.import_markdown(tmp_path)
    assert (report["created"], report["skipped"]) == (0, 1), report
    [change] = report["changes"]
    assert change["outcome"] == "skipped" and "deleted since" in change["detail"]
    assert mem.list_notes()["notes"] == []
    mem.restore(note)
    assert mem.import_markdown(tmp_path)["updated"] == 1
    assert mem.get(note)["content"] == "v1 edited"


def test_a_file_of_this_memory_without_its_id_is_read_by_key_and_version(
    mem: recuerdo.Memory, tmp_path: Path
) -> None:
    """The review of the change above: a file whose id was taken out stays an edit of the note
    its key names, at its version (it is this memory's)."""
    note = mem.save("Doc", "v1", key="doc")["id"]
    mem.export_markdown(tmp_path)
    [path] = tmp_path.rglob("*.md")
    text = path.read_text()
    path.write_text("\n".join(line for line in text.split("\n") if not line.startswith("id:")))
    _edit(path, "v1", "v1 edited")
    report = mem.import_markdown(tmp_path)
    assert report["updated"] == 1 and report["conflicts"] == 0
    assert mem.get(note)["content"] == "v1 edited"


def test_an_unedited_round_trip_changes_nothing(mem: recuerdo.Memory, tmp_path: Path) -> None:
    a = mem.save("Alpha", "links to [[Beta]]", key="a")["id"]
    b = mem.save("Beta", "---\ntitle: fake\n---\n# heading", tags=["x"])["id"]
    mem.link(a, mem.remember("learning", "an entry"))
    mem.save("Alpha", "second version [[Beta]]", key="a")
    mem._upkeep.drain()
    before = deep_dump(mem.location)
    mem.export_markdown(tmp_path)
    report = mem.import_markdown(tmp_path)
    assert (report["unchanged"], report["changes"]) == (2, [])
    mem._upkeep.drain()
    assert deep_dump(mem.location) == before
    assert mem.export_markdown(tmp_path)["written"] == 0  # the files are already the notes
    assert b in [link["id"] for link in mem.links(a)["outgoing"]]


def test_an_edited_file_is_a_new_revision_by_markdown(mem: recuerdo.Memory, tmp_path: Path) -> None:
    note = mem.save("Plan", "step one", key="plan", tags=["t"])["id"]
    mem.export_markdown(tmp_path)
    path = tmp_path / "user/Plan.md"
    _edit(path, "step one", "step one\nstep two")
    report = mem.import_markdown(tmp_path)
    assert report["updated"] == 1
    assert report["changes"][0] == {
        "path": "user/Plan.md",
        "outcome": "updated",
        "id": note,
        "version": 2,
    }
    assert mem.get(note)["content"] == "step one\nstep two"
    last = mem.history(note)[-1]
    assert (last["principal"], last["operation"], last["version"]) == ("markdown", "external", 2)
    assert markdown.parse(path.read_text()).fields["version"] == 2  # the file follows
    _edit(path, "step two", "step three")  # a second edit of the same file is no conflict
    assert mem.import_markdown(tmp_path)["updated"] == 1
    assert mem.get(note)["version"] == 3


def test_title_tags_and_kind_edits_are_revisions_too(mem: recuerdo.Memory, tmp_path: Path) -> None:
    note = mem.save("Old title", "body", tags=["a"])["id"]
    mem.export_markdown(tmp_path)
    path = tmp_path / "user/Old title.md"
    _edit(path, '"Old title"', '"New title"')
    _edit(path, '["a"]', '["a", "b"]')
    _edit(path, '"manual"', '"decision"')
    assert mem.import_markdown(tmp_path)["updated"] == 1
    got = mem.get(note)
    assert (got["title"], got["tags"], got["kind"], got["version"]) == (
        "New title",
        ["a", "b"],
        "decision",
        2,
    )


def test_a_stale_edit_is_a_conflict_never_an_overwrite(
    mem: recuerdo.Memory, tmp_path: Path
) -> None:
    note = mem.save("Doc", "v1", key="doc")["id"]
    mem.export_markdown(tmp_path)
    mem.save("Doc", "v2 from an agent", key="doc")
    _edit(tmp_path / "user/Doc.md", "v1", "v1 edited by hand")
    report = mem.import_markdown(tmp_path)
    assert report["conflicts"] == 1 and report["updated"] == 0
    change = report["changes"][0]
    assert change["outcome"] == "conflict" and change["id"] == note
    assert mem.get(note)["content"] == "v2 from an agent"
    kept = mem.conflicts(note)
    assert [(c["revision_id"], c["content"], c["principal"], c["based_on"]) for c in kept] == [
        (change["conflict_revision_id"], "v1 edited by hand", "markdown", 1)
    ]
    again = mem.import_markdown(tmp_path)  # the same stale file is kept once, not twice
    assert again["conflicts"] == 1 and len(mem.conflicts(note)) == 1


def test_an_old_unedited_file_is_behind_not_a_conflict(
    mem: recuerdo.Memory, tmp_path: Path
) -> None:
    note = mem.save("Doc", "v1", key="doc")["id"]
    mem.export_markdown(tmp_path)
    mem.save("Doc", "v2", key="doc")
    report = mem.import_markdown(tmp_path)
    assert report["behind"] == 1 and report["conflicts"] == 0
    assert mem.get(note)["content"] == "v2" and mem.conflicts(note) == []


def test_a_new_file_makes_a_note_in_its_folders_scope(mem: recuerdo.Memory, tmp_path: Path) -> None:
    (tmp_path / "project/shop").mkdir(parents=True)
    path = tmp_path / "project/shop/Returns policy.md"
    path.write_text("Thirty days, see [[Checkout]].\n", encoding="utf-8")
    report = mem.import_markdown(tmp_path)
    assert report["created"] == 1
    note = report["changes"][0]["id"]
    assert isinstance(note, int)
    got = mem.get(note)
    assert (got["title"], got["scope"], got["content"]) == (
        "Returns policy",
        "project:shop",
        "Thirty days, see [[Checkout]].",
    )
    assert mem.history(note)[0]["principal"] == "markdown"
    assert markdown.parse(path.read_text()).fields["id"] == note  # the file now names it
    assert mem.import_markdown(tmp_path)["created"] == 0  # and is not made twice


def test_wikilinks_survive_a_round_trip_into_a_new_memory(
    mem: recuerdo.Memory, base: Path, tmp_path: Path
) -> None:
    mem.save("Zeta", "see [[Alpha]] and [[Beta|the beta]]")
    mem.save("Alpha", "first")
    mem.save("Beta", "second")
    mem.export_markdown(tmp_path)
    with recuerdo.open("copy", base_dir=base, embedder="none") as copy:
        assert copy.import_markdown(tmp_path)["created"] == 3
        notes = {n["title"]: n["id"] for n in copy.list_notes()["notes"]}
        linked = {item["title"] for item in copy.links(notes["Zeta"])["outgoing"]}
        assert linked == {"Alpha", "Beta"}


def test_ids_from_another_memory_are_not_trusted(
    mem: recuerdo.Memory, base: Path, tmp_path: Path
) -> None:
    """A folder exported from one memory never writes over another memory's note that happens
    to have the same id."""
    mem.save("Theirs", "from the first memory")
    mem.export_markdown(tmp_path)
    with recuerdo.open("other", base_dir=base, embedder="none") as other:
        mine = other.save("Mine", "must stay")["id"]
        report = other.import_markdown(tmp_path)
        assert report["created"] == 1
        assert other.get(mine)["content"] == "must stay"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\ntitle: x\n", "never closed"),
        ("---\nid: [1\n---\nbody", "YAML"),
        ('---\nid: "one"\n---\nbody', "whole number"),
        ('---\nkind: "Not A Kind!"\n---\nbody', "kind"),
        ('---\ntitle: "t"\n---\n   \n', "empty"),
    ],
)
def test_unreadable_files_are_skipped_with_a_reason(
    mem: recuerdo.Memory, tmp_path: Path, text: str, reason: str
) -> None:
    (tmp_path / "bad.md").write_text(text, encoding="utf-8")
    before = deep_dump(mem.location)
    report = mem.import_markdown(tmp_path)
    assert report["skipped"] == 1 and reason in report["changes"][0]["detail"]
    assert deep_dump(mem.location) == before


def test_front_matter_rewritten_by_an_editor_is_read_as_yaml(
    mem: recuerdo.Memory, tmp_path: Path
) -> None:
    note = mem.save("Doc", "body", key="doc", tags=["a"])["id"]
    (tmp_path / "user").mkdir()
    (tmp_path / "user/Doc.md").write_text(
        f"---\nid: {note}\ntitle: Doc\nkey: doc\nkind: manual\nscope: user\nversion: 1\n"
        "tags:\n  - a\n  - b\nmemory: notes\n---\nbody\n",
        encoding="utf-8",
    )
    assert mem.import_markdown(tmp_path)["updated"] == 1
    assert mem.get(note)["tags"] == ["a", "b"]


# Markdown-significant characters, unicode, and text that looks like front matter.
_ALPHABET = st.sampled_from(
    [*list("abcXYZ019 #*_`[]|-:>\"'\\/.!~{}<&"), "é", "ß", "漢", "😀", "\u200b", "Ω"]
)
_titles = st.text(_ALPHABET, min_size=1, max_size=30).filter(lambda t: t.strip())
_lines = st.one_of(
    st.text(_ALPHABET, max_size=40),
    st.sampled_from(["---", "...", "title: fake", "id: 99", "```", "# Heading", "- [x] done", ""]),
)
_bodies = st.lists(_lines, min_size=1, max_size=6).map("\n".join).filter(lambda t: t.strip())
_scopes = st.sampled_from(["user", "project:shop", "project:a/b", "team"])


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    notes=st.lists(
        st.tuples(_titles, _bodies, _scopes, st.booleans(), st.lists(st.sampled_from("xyz"))),
        min_size=1,
        max_size=6,
    ),
    trailing=st.booleans(),
)
def test_round_trip_of_random_notes(
    notes: list[tuple[str, str, str, bool, list[str]]], trailing: bool
) -> None:
    """Any notes: export then import writes nothing; into a new memory, the same notes."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        with recuerdo.open("original", base_dir=base, embedder="none") as memory:
            for index, (title, body, scope, keyed, tags) in enumerate(notes):
                text = body + ("\n" if trailing else "")
                key = f"k/{index}" if keyed else None
                memory.save(title, text, scope=scope, key=key, tags=tags)
            memory._upkeep.drain()
            before = deep_dump(memory.location)
            memory.export_markdown(base / "md")
            report = memory.import_markdown(base / "md")
            assert report["changes"] == [] and report["unchanged"] == report["files"]
            memory._upkeep.drain()
            assert deep_dump(memory.location) == before
            wanted = _notes(memory)
        with recuerdo.open("copy", base_dir=base, embedder="none") as copy:
            copy.import_markdown(base / "md")
            assert _notes(copy) == wanted


def _notes(memory: recuerdo.Memory) -> list[tuple[object, ...]]:
    return sorted(
        _rows(memory, "SELECT title, content, scope, key, category, tags FROM items"),
        key=repr,
    )


def test_the_cli_commands(base: Path, tmp_path: Path) -> None:
    with recuerdo.open("cli", base_dir=base, embedder="none") as memory:
        note = memory.save("Doc", "text", key="doc")["id"]

    def run(*args: str) -> dict[str, object]:
        done = subprocess.run(
            recuerdo_command("--state-dir", str(base), "--memory", "cli", "--json", *args),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert run("export-markdown", str(tmp_path))["notes"] == 1
    _edit(tmp_path / "user/Doc.md", "text", "more text")
    assert run("import-markdown", str(tmp_path))["updated"] == 1
    with recuerdo.open("cli", base_dir=base, embedder="none") as memory:
        assert memory.get(note)["content"] == "more text"


def test_importing_a_missing_folder_is_refused(mem: recuerdo.Memory, tmp_path: Path) -> None:
    with pytest.raises(recuerdo.errors.InvalidInput):
        mem.import_markdown(tmp_path / "nowhere")


def test_front_matter_is_rendered_after_the_memory_is_unlocked(
    memory: recuerdo.Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rendering the front matter a file gets back holds no other writer back: it was rendered
    inside the batch's write, 500 files at a time, while every writer of the memory waited
    (decision 0140). A write from another thread while it renders is done before it ends."""
    meanwhile = WritesMeanwhile(memory, markdown.rewrite_front)
    monkeypatch.setattr(markdown, "rewrite_front", meanwhile)
    (tmp_path / "user").mkdir()
    path = tmp_path / "user/Returns policy.md"
    path.write_text("Thirty days.\n", encoding="utf-8")
    report = memory.import_markdown(tmp_path)
    meanwhile.finish()
    assert meanwhile.during == [True] and meanwhile.written
    assert report["created"] == 1
    assert markdown.parse(path.read_text()).fields["id"] == report["changes"][0]["id"]


_KILLED_AFTER_THE_COMMIT = """
import os, signal, sys, recuerdo
from recuerdo.notes import files
def killed(*args, **kwargs):  # the batch is committed, no file has its front matter yet
    os.kill(os.getpid(), signal.SIGKILL)
files._stage_file = killed
with recuerdo.open("notes", base_dir=sys.argv[1], embedder="none") as memory:
    memory.import_markdown(sys.argv[2])
"""


def test_an_import_killed_after_its_commit_is_finished_by_the_next(
    base: Path, tmp_path: Path
) -> None:
    """An import killed (SIGKILL) between a batch's commit and its files' new front matter:
    the next import made a second note of every new file without a key (nothing in the file
    named the note made of it), and left an edited file at its old version, so the file's
    next edit was a conflict instead of an update."""
    with recuerdo.open("notes", base_dir=base, embedder="none") as memory:
        edited = memory.save("Doc", "v1", key="doc")["id"]
        memory.export_markdown(tmp_path)
    _edit(tmp_path / "user/Doc.md", "v1", "v2")
    (tmp_path / "user/Returns.md").write_text("Thirty days.\n", encoding="utf-8")
    (tmp_path / "user/Keyed.md").write_text('---\nkey: "k"\n---\nkeyed\n', encoding="utf-8")
    killed = subprocess.run(
        python_command(_KILLED_AFTER_THE_COMMIT, str(base), str(tmp_path)), check=False
    )
    assert killed.returncode == -signal.SIGKILL
    with recuerdo.open("notes", base_dir=base, embedder="none") as memory:
        assert memory.get(edited)["content"] == "v2"  # the batch was committed
        report = memory.import_markdown(tmp_path)
        assert (report["created"], report["updated"], report["conflicts"]) == (0, 0, 0)
        notes = {n["title"]: n["id"] for n in memory.list_notes()["notes"]}
        assert sorted(notes) == ["Doc", "Keyed", "Returns"]
        for title, note in notes.items():
            fields = markdown.parse((tmp_path / f"user/{title}.md").read_text()).fields
            assert (fields["id"], fields["version"]) == (note, memory.get(note)["version"])
        _edit(tmp_path / "user/Doc.md", "v2", "v3")
        assert memory.import_markdown(tmp_path)["updated"] == 1
        assert memory.get(edited)["content"] == "v3" and memory.conflicts(edited) == []


@pytest.mark.parametrize("front", ["", '---\nkind: "decision"\ntags: ["a"]\n---\n'])
def test_a_file_that_never_got_its_front_matter_is_its_note_not_a_second(
    memory: recuerdo.Memory, tmp_path: Path, front: str
) -> None:
    """The file as it was before an import that stopped before writing its front matter (on
    every backend): read again, it is the note made of it (its front matter written now), not
    a second note; a file with another text or title is another note still."""
    (tmp_path / "user").mkdir()
    path = tmp_path / "user/Returns.md"
    path.write_text(f"{front}Thirty days.\n", encoding="utf-8")
    made = memory.import_markdown(tmp_path)["changes"][0]["id"]
    path.write_text(f"{front}Thirty days.\n", encoding="utf-8")
    report = memory.import_markdown(tmp_path)
    assert (report["created"], report["unchanged"]) == (0, 1)
    assert markdown.parse(path.read_text()).fields["id"] == made
    (tmp_path / "user/Other.md").write_text(f"{front}Thirty days.\n", encoding="utf-8")
    path.write_text(f"{front}Sixty days.\n", encoding="utf-8")
    assert memory.import_markdown(tmp_path)["created"] == 2
    assert len(memory.list_notes()["notes"]) == 3
