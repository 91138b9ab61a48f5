"""The verb table, the error tree and their JSON shapes."""

from __future__ import annotations

import inspect

import pytest

import recuerdo
from recuerdo.engine import Memory
from recuerdo.errors import RecuerdoError, all_error_classes
from recuerdo.facade import _binder
from recuerdo.verbs import VERBS


def test_every_public_memory_method_is_a_verb() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(Memory, inspect.isfunction)
        if not name.startswith("_")
        and name not in {"agent", "for_tenant", "for_principal", "close"}
        # Python-only: a path to ingest, the repositories and mail domains a server serves, its
        # schedule, an archive written to this machine's disk, the meaning state a profile adds
        # to replies, notes written to and read from Markdown files on this machine's disk, the
        # owner's maintenance of the whole store (a command, as backup is).
        and name
        not in {
            "code_ingest_path",
            "serve_code",
            "code_refresh",
            "serve_mail",
            "backup",
            "compact",
            "meaning_state",
            "export_markdown",
            "import_markdown",
        }
    }
    assert methods == {verb.method for verb in VERBS}


def test_params_follow_the_signatures() -> None:
    for verb in VERBS:
        signature = inspect.signature(getattr(Memory, verb.method))
        assert verb.param_names() == [p for p in signature.parameters if p != "self"]
        assert verb.mode in ("read", "write")
        assert verb.description.endswith(".")
        verb.params.model_json_schema()  # every verb has a JSON schema


def _calls(signature: inspect.Signature) -> list[tuple[tuple[object, ...], dict[str, object]]]:
    """Calls of every shape for a verb's signature: well formed (required ones by position,
    by name, and with every optional one) and ill formed (an unknown name, a name given twice,
    one positional too many, a required one left out)."""
    parameters = list(signature.parameters.values())
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    required = [p.name for p in parameters if p.default is p.empty]
    calls: list[tuple[tuple[object, ...], dict[str, object]]] = [
        (tuple(f"v-{name}" for name in required), {}),
        ((), {name: f"v-{name}" for name in required}),
        ((), {p.name: f"v-{p.name}" for p in parameters}),
        ((), {p.name: f"v-{p.name}" for p in reversed(parameters)}),
        (tuple(f"v-{name}" for name in positional), {}),
        ((), {**{name: 1 for name in required}, "no_such_argument": 1}),
        ((*(f"v-{name}" for name in positional), "one too many"), {}),
    ]
    if positional:
        calls.append(((f"v-{positional[0]}",), {positional[0]: "again"}))
    if len(required) > 1:
        calls.append(((), {name: 1 for name in required[1:]}))
    return calls


@pytest.mark.parametrize("name", [verb.method for verb in VERBS])
def test_a_verbs_arguments_are_named_as_signature_bind_names_them(name: str) -> None:
    signature = inspect.signature(getattr(Memory, name))
    by_name = _binder(signature)
    for args, kwargs in _calls(signature):
        try:
            expected = dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:
            with pytest.raises(TypeError):
                by_name(args, kwargs)
        else:
            assert list(by_name(args, kwargs).items()) == list(expected.items())


def test_a_write_verb_called_with_positional_arguments_is_guarded() -> None:
    with recuerdo.open("verbs-positional", in_memory=True) as mem:
        saved = mem.save("Deploy", "the password=hunter2 works", kind="config")
        note = mem.get(saved["id"])
    assert note["content"] == "the password=secret(PASSWORD) works"
    assert note["kind"] == "config"


def test_a_refusal_names_the_first_bad_argument_of_the_signature() -> None:
    """Whatever order the call names them in: ``title`` comes before ``content``."""
    with recuerdo.open("verbs-order", in_memory=True) as mem:
        with pytest.raises(recuerdo.InvalidInput, match=r"^title holds text"):
            mem.save(content="\ud800", title="\ud800")
        assert mem.recent()["ids"] == []


def test_recall_schema_uses_the_json_name_from() -> None:
    schema = VERBS["recall"].params.model_json_schema()
    assert "from" in schema["properties"] and "from_" not in schema["properties"]
    remember = VERBS["remember"].params.model_json_schema()
    assert remember["required"] == ["category", "content"]
    assert remember["properties"]["category"]["enum"] == list(recuerdo.CATEGORIES)


def test_call_validates_and_maps_errors() -> None:
    with recuerdo.open("verbs", in_memory=True) as mem:
        entry_id = VERBS["remember"].call(
            mem, {"category": "learning", "content": "x", "tags": ["t"]}
        )
        assert VERBS["recall"].call(mem, {"from": "main"})[0]["id"] == entry_id
        with pytest.raises(recuerdo.InvalidInput) as caught:
            VERBS["remember"].call(mem, {"category": "learning"})
        assert caught.value.code == "invalid_input"
        assert "content: Field required" in caught.value.detail
        with pytest.raises(recuerdo.InvalidInput) as caught:
            VERBS["recall"].call(mem, {"colour": "red"})
        assert "colour" in caught.value.detail
        assert VERBS["recall"].call(mem, {"limit": "abc"})[0]["id"] == entry_id


def test_error_codes_are_unique_and_statuses_valid() -> None:
    classes = all_error_classes()
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes))
    assert all(400 <= cls.status <= 599 for cls in classes)
    assert set(recuerdo.__all__) >= {cls.__name__ for cls in classes}


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.__name__)
def test_one_json_error_shape(cls: type[RecuerdoError]) -> None:
    shape = cls("something went wrong").to_dict()
    assert shape == {"ok": False, "error": cls.code, "detail": "something went wrong"}


def test_the_tree_is_drawn_in_the_docstring() -> None:
    import recuerdo.errors as errors_module

    doc = errors_module.__doc__ or ""
    for cls in all_error_classes():
        assert f"{cls.__name__} " in doc and cls.code in doc, cls.__name__
