"""The verb table, the error tree and their JSON shapes."""

from __future__ import annotations

import inspect

import pytest

import recuerdo
from recuerdo.engine import Memory
from recuerdo.errors import RecuerdoError, all_error_classes
from recuerdo.verbs import VERBS


def test_every_public_memory_method_is_a_verb() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(Memory, inspect.isfunction)
        if not name.startswith("_")
        and name not in {"agent", "for_tenant", "for_principal", "close"}
        # Python-only: a path to ingest, the repositories a server serves, its schedule, an
        # archive written to this machine's disk, the meaning state a profile adds to replies.
        and name
        not in {"code_ingest_path", "serve_code", "code_refresh", "backup", "meaning_state"}
    }
    assert methods == {verb.method for verb in VERBS}


def test_params_follow_the_signatures() -> None:
    for verb in VERBS:
        signature = inspect.signature(getattr(Memory, verb.method))
        assert verb.param_names() == [p for p in signature.parameters if p != "self"]
        assert verb.mode in ("read", "write")
        assert verb.description.endswith(".")
        verb.params.model_json_schema()  # every verb has a JSON schema


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
