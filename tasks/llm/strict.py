"""The strict JSON schema of an answer model, from pydantic's public ``model_json_schema``.

OpenAI's structured outputs with ``strict: true`` accept a subset of JSON Schema: every
object lists all its properties as ``required`` and sets ``additionalProperties: false``,
and a ``$ref`` stands alone (no sibling keywords such as ``description``).  An optional field
stays optional by being nullable (``anyOf [..., null]``), so a ``null`` default says nothing
and is dropped.  These are the rules the ``openai`` SDK applies to pydantic models itself;
written here so artoo depends on no private SDK module.  Pure: tested table-driven.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema made strict (a new dict; pydantic's own is not touched)."""
    schema = copy.deepcopy(model.model_json_schema())
    return strictify(schema, schema)


def strictify(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Make one schema node strict in place (recursively) and return it; ``root`` resolves ``$ref``."""
    if not isinstance(node, dict):
        raise TypeError(f"a JSON schema node must be an object, got {node!r}")
    for definition in (node.get("$defs") or {}).values():
        strictify(definition, root)
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {key: strictify(value, root) for key, value in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = strictify(node["items"], root)
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [strictify(variant, root) for variant in node["anyOf"]]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:
            node.update(strictify(node.pop("allOf")[0], root))
        else:
            node["allOf"] = [strictify(part, root) for part in all_of]
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if ref and len(node) > 1:  # a $ref with siblings: inline its target, the siblings win
        node.update({**resolve(root, ref), **node})
        del node["$ref"]
        return strictify(node, root)
    return node


def resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    """The node a local ``#/...`` reference points at (a copy)."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref (#/...) can be inlined, got {ref!r}")
    target: Any = root
    for key in ref[2:].split("/"):
        target = target[key]
    if not isinstance(target, dict):
        raise ValueError(f"$ref {ref!r} points at {target!r}, not a schema object")
    return copy.deepcopy(target)
