"""Strict JSON for request bodies, shared by REST and GraphQL: bounded nesting, finite numbers, UTF-8.

Python's `json` parses recursively: about 1,000 levels of `[` (2 KB) raise RecursionError, and
even a depth it accepts can exhaust the recursion of code that walks the value later (serializers,
GraphQL variable coercion, the idempotency fingerprint). No API body is deeper than a few levels,
so a body nested deeper than MAX_DEPTH is refused before anything else sees it. `NaN`, `Infinity`
and numbers too large for a double are refused too: they are not JSON (RFC 8259) and would fail
when answered back.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32  # the deepest API body (GraphQL variables with an input object) is far below this


class JSONBodyError(ValueError):
    """A body that is not acceptable JSON; `code` is the stable error code to answer with."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code, self.detail = code, detail


def _refuse_constant(name: str) -> Any:
    raise JSONBodyError("malformed_request", f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONBodyError("malformed_request", f"the number {text[:40]} is out of range")
    return value


def depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        stack.extend((child, level + 1) for child in children)
    return deepest


def loads(raw: bytes | str) -> Any:
    """The JSON value of a request body, or JSONBodyError (code `malformed_request`) when it is not
    UTF-8, not JSON, uses NaN/Infinity, or is nested deeper than MAX_DEPTH."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise JSONBodyError("malformed_request", "the body is not UTF-8") from exc
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError as exc:
        raise JSONBodyError("malformed_request", f"JSON nested deeper than {MAX_DEPTH} levels") from exc
    except JSONBodyError:
        raise
    except ValueError as exc:  # JSONDecodeError, and integers over Python's digit limit
        raise JSONBodyError("malformed_request", f"the body is not valid JSON: {exc}") from exc
    if depth(value) > MAX_DEPTH:
        raise JSONBodyError("malformed_request", f"JSON nested deeper than {MAX_DEPTH} levels")
    return value
