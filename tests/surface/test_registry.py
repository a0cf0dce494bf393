"""The tool table: names match the contract, schemas are valid object schemas, declarations are complete."""

from __future__ import annotations

from typing import Any

import jsonschema
import typing_extensions
from pydantic import BaseModel, JsonValue

from ask_fable.surface.registry import all_tools, input_schema, output_schema
from tests.spec_tools import ALL_SPEC_TOOLS, SPEC_TOOLS


def test_every_registered_tool_is_a_contract_tool_in_its_family() -> None:
    for spec in all_tools():
        assert spec.name in ALL_SPEC_TOOLS, f"{spec.name} is not in the contract"
        assert spec.name in SPEC_TOOLS[spec.family], (
            f"{spec.name} is declared in the wrong family {spec.family}"
        )


def test_families_present_are_complete() -> None:
    registered = {spec.name for spec in all_tools()}
    for family in {spec.family for spec in all_tools()}:
        missing = set(SPEC_TOOLS[family]) - registered
        assert not missing, f"family {family} lacks {sorted(missing)}"


def test_every_schema_is_a_valid_object_schema() -> None:
    for spec in all_tools():
        for schema in (input_schema(spec), output_schema(spec)):
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object"
            assert "title" not in schema
        assert "status" in output_schema(spec)["properties"]
        assert input_schema(spec).get("additionalProperties") is False


def test_every_tool_has_a_description_and_consistent_annotations() -> None:
    """Read-only tools are never destructive; a read-only tool that is not idempotent asks a model
    (each call is a new answer), so it is open-world; a tool asking one backend is open-world.
    Whether each tool does what its annotations say is checked by calling it
    (``tests/e2e/test_tool_annotations.py``)."""
    for spec in all_tools():
        assert spec.description.strip()
        assert not (spec.read_only and spec.destructive), spec.name
        if spec.read_only and not spec.idempotent:
            assert spec.open_world, spec.name
        if spec.backend is not None:
            assert spec.open_world, spec.name


#: Result fields that hold JSON of any shape on purpose: a trace event's metadata and a saved setting's value.
JSON_FIELDS = {"TraceEvent.attrs", "SavedSetting.value"}


def _untyped(tp: Any, where: str, seen: set[Any]) -> list[str]:
    """The fields under ``tp`` typed ``Any``, or JSON of any shape outside :data:`JSON_FIELDS`."""
    if tp is Any or (tp is JsonValue and where not in JSON_FIELDS):
        return [where]
    if tp in seen:
        return []
    fields: dict[str, Any] = {}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        fields = {name: field.annotation for name, field in tp.model_fields.items()}
    elif typing_extensions.is_typeddict(tp):
        fields = typing_extensions.get_type_hints(tp, include_extras=True)
    else:
        return [found for arg in typing_extensions.get_args(tp) for found in _untyped(arg, where, seen)]
    seen.add(tp)
    return [found for name, hint in fields.items() for found in _untyped(hint, f"{tp.__name__}.{name}", seen)]


def test_every_result_field_is_typed_down_to_its_leaves() -> None:
    """A result holds its views as they are typed (records, typed dicts), never ``dict[str, Any]``."""
    seen: set[Any] = set()
    untyped = {found for spec in all_tools() for found in _untyped(spec.result, spec.result.__name__, seen)}
    assert not untyped
    walked = {t.__name__ for t in seen}
    assert {"StatsBucket", "BucketFigures", "ListedModel", "Picker", "HubSession"} <= walked
