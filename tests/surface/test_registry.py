"""The tool table: names match the contract, schemas are valid object schemas, declarations are complete."""

from __future__ import annotations

import jsonschema

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
