"""The strict JSON schema sent for OpenAI structured outputs, built from pydantic's public schema."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from artoo.tasks.llm.output.modes import resolve, strict_json_schema, strictify


class Leaf(BaseModel):
    name: str
    size: int = 0


class Tree(BaseModel):
    leaf: Leaf = Field(description="a $ref with a sibling description")
    leaves: list[Leaf]
    note: str | None = None
    first: Leaf


def objects(node: Any) -> list[dict]:
    """Every object-typed node of a schema."""
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.values():
            found += objects(value)
    elif isinstance(node, list):
        for value in node:
            found += objects(value)
    return found


def test_every_object_is_closed_and_requires_all_its_properties():
    schema = strict_json_schema(Tree)
    assert len(objects(schema)) >= 3  # Tree, Leaf in $defs, the inlined leaf
    for node in objects(schema):
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])


@pytest.mark.parametrize(("field", "expected"), [
    ("leaf", {"description": "a $ref with a sibling description", "title": "Leaf", "type": "object",
              "additionalProperties": False, "required": ["name", "size"]}),
    ("first", {"$ref": "#/$defs/Leaf"}),              # a lone $ref stays a reference
    ("leaves", {"type": "array", "items": {"$ref": "#/$defs/Leaf"}}),
    ("note", {"anyOf": [{"type": "string"}, {"type": "null"}]}),  # nullable: the None default is dropped
])
def test_fields(field: str, expected: dict):
    got = strict_json_schema(Tree)["properties"][field]
    assert {k: v for k, v in got.items() if k in expected and k != "properties"} == \
        {k: v for k, v in expected.items() if k != "properties"}
    assert "default" not in got


def test_pydantic_schema_is_left_untouched():
    strict_json_schema(Tree)
    assert "additionalProperties" not in Tree.model_json_schema()


def test_a_single_allof_is_merged():
    root = {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}]}
    assert strictify(root, root) == {"type": "object", "properties": {"a": {"type": "string"}},
                                     "required": ["a"], "additionalProperties": False}


@pytest.mark.parametrize(("ref", "error"), [("http://x/schema", ValueError), ("#/$defs/missing", KeyError)])
def test_bad_refs_are_refused(ref: str, error: type[Exception]):
    with pytest.raises(error):
        resolve({"$defs": {}}, ref)


def test_a_node_that_is_not_an_object_is_refused():
    with pytest.raises(TypeError, match="must be an object"):
        strictify(["not", "a", "schema"], {})
