"""Reply types share one namespace per published document: two different types of one name
would make the OpenAPI document describe one with the other's shape."""

from __future__ import annotations

from typing import Any

import pytest

from recuerdo.doors import profiles, schemas


@pytest.mark.parametrize("name", profiles.PROFILES)
def test_every_reply_type_of_a_profile_has_a_name_of_its_own(name: str) -> None:
    components: dict[str, Any] = {}
    for entry in profiles.profile(name):
        schemas.tool_reply_schema(entry, components)  # raises on a clash
    assert components  # the replies are typed, so there is something to share


def test_a_clash_is_refused_by_name() -> None:
    components: dict[str, Any] = {"Span": {"type": "object", "properties": {"a": {}}}}
    with pytest.raises(TypeError, match="'Span'"):
        schemas.hoist_defs({"$defs": {"Span": {"type": "string"}}}, components)
