"""Method parameters checked against their context dataclass before any graph runs.

Each value must have its field's type (``k`` a whole number, ``retrieval`` one of its ``Literal``
choices, ``discovery`` a true/false) and a sensible range (counts at least 1, thresholds and
weights between 0 and 1, every number finite), so a wrong value is one sentence naming the fix,
never a traceback or a silently different run (unchecked, ``k=0`` would answer closed-book).

A leaf next to the registry rather than inside it, so nodes can check a ``context={...}`` dict
given to ``invoke`` too: it imports nothing but the config and the errors.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any, Literal

from causalrag.errors import InvalidAssignmentError, InvalidParameterError, UnknownParameterError

AT_LEAST_ONE = frozenset({
    "k", "max_new_tokens", "n_candidates", "candidates", "sc_permutations", "n_counterfactuals",
    "validation_k", "regenerate_samples", "clusters", "hypotheses", "hypothesis_tokens", "synthesis_k",
    "iterations", "internal_tokens", "consolidation_tokens", "retrieve_k", "evidence_size",
    "max_iterations", "reasoning_tokens", "query_tokens",
})
"""Counts and token budgets where 0 or less leaves a step with nothing to do."""
UNIT_INTERVAL = frozenset({
    "theta_sim", "theta_repeat", "theta_dedup", "theta_quality", "theta_rel", "rho", "lam", "lambda1",
    "lambda2", "w_confidence", "w_specificity", "theta_agree", "consensus_share", "gate_threshold",
    "info_alpha", "info_beta", "info_gamma",
})
"""Similarities, shares, weights and probability thresholds."""
LOG_PROBABILITIES = frozenset({"knowledge_confidence", "minority_confidence", "contrast_confidence"})
"""Thresholds on a mean per-token log-probability: 0 or below."""
ABOVE_ZERO = frozenset({"tau"})
"""Divisors (a temperature of the Gumbel softmax)."""
OBJECTS = {"llm": "generate", "store": "retrieve"}
"""Dependencies, not values: an object with this method, or None for the default."""
COLLECTION_NAME = re.compile(r"(?!.*\.\.)[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
"""Chroma's rule: 3-512 characters, letters/digits at both ends, no two dots in a row."""

TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def field_types(context: type) -> dict[str, Any]:
    """Each context field's type (``X | None`` kept as is)."""
    hints = typing.get_type_hints(context)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(context)}


def _optional(kind: Any) -> tuple[Any, bool]:
    """``X | None`` → (X, True); anything else → (kind, False)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else Any), True
    return kind, False


def describe(kind: Any) -> str:
    """What a value of ``kind`` looks like, for error messages."""
    kind, nullable = _optional(kind)
    text = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}.get(kind)
    if typing.get_origin(kind) is Literal:
        text = "one of " + ", ".join(map(str, typing.get_args(kind)))
    elif typing.get_origin(kind) is list:
        text = "a comma-separated list"
    return (text or "a value") + (" (or none)" if nullable else "")


def _problem(name: str, value: Any) -> str | None:
    """What a value of the right type must be instead, when its range or form is wrong."""
    if name == "collection" and not COLLECTION_NAME.fullmatch(value):
        return "3-512 letters, digits, dots, dashes or underscores, starting and ending with a letter or digit"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not math.isfinite(value):
        return "a finite number"
    if name in AT_LEAST_ONE and value < 1:
        return "at least 1"
    if name in ABOVE_ZERO and value <= 0:
        return "above 0"
    if name in UNIT_INTERVAL and not 0 <= value <= 1:
        return "between 0 and 1"
    if name in LOG_PROBABILITIES:
        return "0 or less (a mean per-token log-probability)" if value > 0 else None
    if value < 0:
        return "0 or more"
    return None


def check_value(method: str, name: str, kind: Any, value: Any) -> Any:
    """``value`` as field ``name`` of type ``kind`` takes it, or :class:`~causalrag.errors.InvalidParameterError`.

    An int for a float field becomes a float.
    """
    if name in OBJECTS:
        if value is None or callable(getattr(value, OBJECTS[name], None)):
            return value
        raise InvalidParameterError(
            method, name, value, f"an object with a .{OBJECTS[name]}() method (or None for the default)"
        )
    base, nullable = _optional(kind)
    if value is None and nullable:
        return value
    if not _fits(base, value):
        raise InvalidParameterError(method, name, value, describe(kind))
    if problem := _problem(name, value):
        raise InvalidParameterError(method, name, value, problem)
    return float(value) if base is float else value


def _fits(base: Any, value: Any) -> bool:
    if base is bool:
        return isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base is str:
        return isinstance(value, str)
    if typing.get_origin(base) is Literal:
        return any(value == choice and type(value) is type(choice) for choice in typing.get_args(base))
    if typing.get_origin(base) is list:
        (item,) = typing.get_args(base) or (Any,)
        return isinstance(value, list) and (item is Any or all(isinstance(v, item) for v in value))
    return True  # a type this check does not know (Any, a class): the context takes it as is


def check_params(method: str, context: type, params: dict[str, Any]) -> dict[str, Any]:
    """Every value in ``params`` checked against ``context``'s field types and ranges.

    Names are checked by the registry; a name ``context`` does not have is left out here.
    """
    kinds = field_types(context)
    return {name: check_value(method, name, kinds[name], value) for name, value in params.items() if name in kinds}


def check_context(ctx: Any) -> Any:
    """A context object whose fields were set directly (e.g. ``invoke(..., context={"k": 0})``), checked in place."""
    values = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    for name, value in check_params(type(ctx).__name__, type(ctx), values).items():
        setattr(ctx, name, value)
    return ctx


def parse_value(method: str, name: str, kind: Any, text: str) -> Any:
    """A command-line string as field ``name`` of type ``kind`` (checked), or InvalidParameterError."""
    if name in OBJECTS:
        raise InvalidParameterError(
            method, name, text, "an object, which the command line cannot pass (use --model or --collection)"
        )
    base, nullable = _optional(kind)
    word = text.strip().lower()
    if nullable and word in ("none", "null", ""):
        return None
    try:
        value = _parse(base, text, word)
    except ValueError:
        raise InvalidParameterError(method, name, text, describe(kind)) from None
    return check_value(method, name, kind, value)


def _parse(base: Any, text: str, word: str) -> Any:
    if base is bool:
        if word not in TRUE + FALSE:
            raise ValueError(text)
        return word in TRUE
    if base is int:
        return int(word)
    if base is float:
        return float(word)
    if typing.get_origin(base) is list:
        return [t.strip() for t in text.split(",") if t.strip()]
    return text.strip() if base is str or typing.get_origin(base) is Literal else text


def parse_assignments(method: str, context: type, assignments: typing.Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` strings → checked values of ``context``'s fields."""
    kinds = field_types(context)
    values: dict[str, Any] = {}
    for item in assignments:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidAssignmentError(item)
        if name not in kinds:
            raise UnknownParameterError(method, [name], sorted(set(kinds) - set(OBJECTS)))
        values[name] = parse_value(method, name, kinds[name], text)
    return values
