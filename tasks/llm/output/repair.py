"""Repair before re-ask: deterministic fixes for what real models write, each one named, and the one re-ask.

A small local model answers the right thing in the wrong shape: the planner numbers subtasks
from 0, the executor puts an object where ``output`` wants a string, a validator writes "PASS ".
Asking again costs a 10–60 s call and the model often repeats itself; refusing abandons the task
over formatting.  So before the one re-ask, ``repair_answer`` applies fixes that cannot change
what the model meant, and returns the answer with the list of ``Repair`` s (the decision log and
the INFO log show each).  When none makes the answer valid, InvalidAnswer carries the validation
error that is still left, which is what the re-ask sends back.

The fixes are driven by pydantic's own validation errors, at the place each error names, against
the answer's JSON schema (the one the model was shown):

* ``to_string``: an object or list where a string is expected is serialised as compact JSON; a
  list of strings is joined with newlines instead (lines are what a model means by a list of
  sentences, and the result reads as written); a number or boolean is written as JSON.
* ``enum_case``: "Completed", "PASS ", "best practice" → the schema's value, only when exactly
  one value matches ignoring case, surrounding spaces and ``-``/space versus ``_``.
* ``extra_field``: a field the schema does not have is dropped (the answer models forbid extras
  so drift is caught: the drift is logged here instead); ``field_case``: one that differs from a
  missing field only in case or separators is renamed to it.
* ``one_item_list``: a single object where a list of objects is expected becomes a one-item list.
  A string where a list is expected is not wrapped: ``"shell, glob"`` as one tool name would hide
  a blocked tool from the plan rules.
* ``missing_null``: a missing field whose schema allows null is set to null (nothing is invented).
* Plans (before validation, since a missing ``sequence`` cannot validate): ``missing_sequence``
  gives a subtask without a number the next number after every subtask listed before it, so the
  steps run in the order listed: a model that omits the numbers lists steps in the order they
  run, and running them in parallel would start a step before the one it needs (counting before
  writing the totals); ``sequence_base`` shifts every number so the lowest is 1 (a 0-based or
  negative plan keeps its order and its parallel groups).

Text-level repairs (fences, prefixes, trailing prose, <think>, several objects) are
``artoo.tasks.llm.output.extract``'s.  What no fix makes valid is asked for once more
(``repair_messages``), and a second invalid answer is the run's ``LLMOutputError`` (``output_error``).
Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import ValidationError

from artoo.config.errors import LLMOutputError
from artoo.config.protocol import Answer, PlanAnswer
from artoo.tasks.llm.base import Endpoint, Repair
from artoo.tasks.llm.output.extract import broken_object, candidates, no_object_reason
from artoo.tasks.llm.output.modes import resolve, strict_json_schema

__all__ = ["MAX_PASSES", "InvalidAnswer", "Repaired", "as_string", "describe_validation", "enum_match", "fix_error",
           "output_error", "plan_sequences", "repair_answer", "repair_messages", "repair_object"]

MAX_PASSES = 6
"""Validation rounds per object; a fix can uncover errors below it (a wrapped list's items)."""


class InvalidAnswer(Exception):
    """The model's content is not a valid answer; the message says why (and is what the re-ask sends)."""


@dataclass(frozen=True)
class Repaired:
    """A valid answer and the fixes that made it so ([] when the model's answer was valid as written)."""

    answer: Answer
    repairs: list[Repair]


def repair_answer(content: str | None, refusal: str | None, model: type[Answer],
                  protocol: frozenset[str] = frozenset()) -> Repaired:
    """The first JSON object in ``content`` that validates as ``model`` once repaired.

    ``protocol``: top-level keys the request's own protocol adds around the answer (the executor's
    ``done``), dropped without counting as a repair.  InvalidAnswer (its message is what the re-ask
    tells the model) when there is none.
    """
    if refusal:
        raise InvalidAnswer(f"the model refused: {refusal}")
    if content is None or not content.strip():
        raise InvalidAnswer("the answer was empty")
    found = candidates(content)
    if not found:
        raise InvalidAnswer(no_object_reason(content))
    first_error = None
    for number, candidate in enumerate(found, 1):
        try:
            value = {k: v for k, v in candidate.value.items() if k not in protocol}
            answer, repairs = repair_object(value, model)
        except InvalidAnswer as exc:
            first_error = first_error or exc
            continue
        several = [Repair("several_objects", f"the answer held {len(found)} JSON objects; took #{number}, "
                                             "the first that validates")] if len(found) > 1 else []
        return Repaired(answer, [*candidate.repairs, *several, *repairs])
    broken = broken_object(content)
    if broken is not None:  # the objects found are fragments of a cut-off or broken answer
        raise InvalidAnswer(broken)
    if len(found) > 1:
        raise InvalidAnswer(f"none of the {len(found)} JSON objects in the answer is valid; the first "
                            f"{first_error}")
    raise first_error


def repair_object(data: dict, model: type[Answer]) -> tuple[Answer, list[Repair]]:
    """``data`` validated as ``model`` after the fixes its validation errors call for."""
    data = copy.deepcopy(data)
    schema = _schema(model)
    repairs: list[Repair] = []
    for _ in range(MAX_PASSES):
        if model is PlanAnswer:  # each pass: a wrapped one-item subtask list is numbered on the next
            repairs += plan_sequences(data)
        try:
            return model.model_validate(data), repairs
        except ValidationError as exc:
            errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
            fixed = [fix for error in errors if (fix := fix_error(data, error, schema)) is not None]
            if not fixed:
                raise InvalidAnswer(f"does not match the schema: {describe_validation(exc)}") from None
            repairs += fixed
    raise InvalidAnswer(f"still invalid after {MAX_PASSES} rounds of repairs")


def fix_error(data: dict, error: dict, schema: dict) -> Repair | None:
    """Fix one pydantic error in ``data`` in place; None when no repair applies to it."""
    loc, value, kind = tuple(error["loc"]), error.get("input"), error["type"]
    parent = _container(data, loc[:-1])
    if parent is None or not loc:
        return None
    where, key = ".".join(str(p) for p in loc), loc[-1]
    if kind == "extra_forbidden" and isinstance(parent, dict):
        return _extra_field(parent, key, _node(schema, loc[:-1]), where)
    if kind == "missing" and isinstance(parent, dict) and key not in parent and _nullable(schema, loc):
        parent[key] = None
        return Repair("missing_null", f"{where}: the missing field, which may be null, was set to null")
    if kind == "string_type" and value is not None:
        parent[key], how = as_string(value)
        return Repair("to_string", f"{where}: {how}")
    if kind in ("literal_error", "enum") and isinstance(value, str):
        match = enum_match(value, _allowed(_node(schema, loc)))
        if match is not None:
            parent[key] = match
            return Repair("enum_case", f"{where}: {value!r} → {match!r}")
    if kind == "list_type" and isinstance(value, dict):
        parent[key] = [value]
        return Repair("one_item_list", f"{where}: wrapped the single object in a list")
    return None


def as_string(value: Any) -> tuple[str, str]:
    """``value`` as the string a schema wants, and how it was written."""
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return "\n".join(value), f"joined a list of {len(value)} strings with newlines"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")), \
            f"serialised the {'object' if isinstance(value, dict) else 'list'} as compact JSON"
    return json.dumps(value), f"wrote {json.dumps(value)} as a string"


def enum_match(value: str, allowed: list[Any]) -> Any | None:
    """The one allowed value ``value`` means, ignoring case, outer spaces and -/space vs _; else None."""
    wanted = _enum_key(value)
    matches = [a for a in allowed if isinstance(a, str) and _enum_key(a) == wanted]
    return matches[0] if len(matches) == 1 else None


def plan_sequences(data: dict) -> list[Repair]:
    """Fill missing sequences (listed order) and shift them so the lowest is 1, in place."""
    subtasks = data.get("subtasks")
    if not isinstance(subtasks, list) or not subtasks or not all(isinstance(s, dict) for s in subtasks):
        return []
    numbers = [_sequence(s.get("sequence")) for s in subtasks]
    if any(n is _NOT_A_NUMBER for n in numbers):
        return []  # validation names it; guessing would reorder the plan
    repairs = []
    missing = [i for i, n in enumerate(numbers) if n is None]
    if missing:
        given = [n for n in numbers if n is not None]
        for i in missing:
            before = [n for n in numbers[:i] if n is not None]
            numbers[i] = max(before) + 1 if before else (min(given) - 1 if given else 1)
        repairs.append(Repair("missing_sequence", f"{len(missing)} subtask(s) had no sequence; each runs after "
                                                  "every subtask listed before it"))
    lowest = min(numbers)
    if lowest < 1:
        numbers = [n + 1 - lowest for n in numbers]
        repairs.append(Repair("sequence_base", f"sequences started at {lowest}; every one shifted by "
                                               f"{1 - lowest:+d} so the lowest is 1"))
    if repairs:
        for subtask, number in zip(subtasks, numbers, strict=True):
            subtask["sequence"] = number
    return repairs


_NOT_A_NUMBER = object()


def _sequence(value: Any) -> Any:
    """A sequence as an int, None when absent, _NOT_A_NUMBER when it is something else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return _NOT_A_NUMBER
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return _NOT_A_NUMBER


def _extra_field(parent: dict, key: Any, node: dict | None, where: str) -> Repair:
    """Rename ``key`` to the missing field it spells differently, else drop it."""
    fields = list((node or {}).get("properties") or {})
    same = [f for f in fields if f not in parent and isinstance(key, str) and _enum_key(f) == _enum_key(key)]
    value = parent.pop(key)
    if len(same) == 1:
        parent[same[0]] = value
        return Repair("field_case", f"{where}: renamed to {same[0]!r}")
    return Repair("extra_field", f"{where}: dropped the field, which the schema does not have")


def _enum_key(text: str) -> str:
    return "_".join(text.strip().casefold().replace("-", " ").replace("_", " ").split())


@cache
def _schema(model: type[Answer]) -> dict:
    return strict_json_schema(model)


def _container(data: Any, path: tuple) -> Any:
    """The dict or list at ``path`` inside ``data``; None when the path does not lead to one."""
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data if isinstance(data, dict | list) else None


def _raw_node(schema: dict, loc: tuple) -> dict | None:
    """The schema node at a pydantic error location, as written (a nullable one keeps its anyOf)."""
    node: dict | None = schema
    for part in loc:
        node = _resolved(schema, node)
        node = (node.get("items") if isinstance(part, int) else (node.get("properties") or {}).get(part))
        if not isinstance(node, dict):
            return None
    return node


def _node(schema: dict, loc: tuple) -> dict | None:
    node = _raw_node(schema, loc)
    return _resolved(schema, node) if node is not None else None


def _resolved(schema: dict, node: dict) -> dict:
    """``node`` with its $ref followed and a nullable anyOf reduced to its one non-null variant."""
    while True:
        if "$ref" in node:
            node = resolve(schema, node["$ref"])
            continue
        variants = [v for v in node.get("anyOf") or [] if v.get("type") != "null"]
        if len(variants) == 1:
            node = variants[0]
            continue
        return node


def _nullable(schema: dict, loc: tuple) -> bool:
    node = _raw_node(schema, loc)
    return node is not None and any(v.get("type") == "null" for v in node.get("anyOf") or [])


def _allowed(node: dict | None) -> list[Any]:
    if node is None:
        return []
    return list(node.get("enum") or ([node["const"]] if "const" in node else []))


def describe_validation(exc: ValidationError, limit: int = 5) -> str:
    """A compact one-line account of a pydantic ValidationError."""
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors[:limit]]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def repair_messages(messages: list[dict], name: str, content: str | None, reason: str) -> list[dict]:
    """The conversation sent back for the one re-ask, with what is still wrong."""
    return [
        *messages,
        {"role": "assistant", "content": content or ""},
        {"role": "user", "content": (
            f"Your previous answer is not a valid {name} object: {reason}. "
            f"Reply with only the corrected JSON object for the schema {name}, nothing else.")},
    ]


def output_error(role: str, schema: str, ep: Endpoint, message: Any, exc: InvalidAnswer) -> LLMOutputError:
    """The run's error for an answer still invalid after the re-ask, with how it began."""
    began = (message.content or message.refusal or "")[:200]
    return LLMOutputError(f"{role} gave an invalid {schema} answer twice (model {ep.model!r}, "
                          f"{ep.tier} tier): {exc}; the answer began: {began!r}")
