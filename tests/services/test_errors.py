"""One error vocabulary: every code the code can send is in games.errors.Code, GraphQL's enum is
generated from it, the docs list it, and an unknown code is refused where it is raised."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from games.engine.errors import CODES as ENGINE_CODES
from games.errors import STATUS, Code, Kind, ServiceError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    p
    for d in ("games", "hearts_service", "bots")
    for p in (ROOT / d).rglob("*.py")
    if "migrations" not in p.parts
]
RAISERS = {"ServiceError", "EngineError", "InvalidOption", "InvalidCard", "Refused", "_coded", "_error"}


def literal_codes() -> dict[str, set[str]]:
    """Every string literal the source passes as an error code: the first string argument of a
    refusal, a `"code": ...` dict entry and a `code=...` keyword."""
    found: dict[str, set[str]] = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            value = None
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in RAISERS:
                    value = next(
                        (
                            a.value
                            for a in node.args
                            if isinstance(a, ast.Constant) and isinstance(a.value, str)
                        ),
                        None,
                    )
                    if name in ("_coded",):  # message first, code second
                        strings = [a.value for a in node.args if isinstance(a, ast.Constant)]
                        value = strings[-1] if strings else None
            elif isinstance(node, ast.Dict):
                for key, item in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "code"
                        and isinstance(item, ast.Constant)
                    ):
                        found.setdefault(str(item.value), set()).add(path.name)
            elif (
                isinstance(node, ast.keyword) and node.arg == "code" and isinstance(node.value, ast.Constant)
            ):
                value = node.value.value
            if isinstance(value, str) and re.fullmatch(r"[a-z_]+", value):
                found.setdefault(value, set()).add(path.name)
    return found


def test_every_code_in_the_source_is_in_the_vocabulary() -> None:
    found = literal_codes()
    assert len(found) > 40  # the scan sees the codes (a broken scan would pass vacuously)
    unknown = {c: sorted(where) for c, where in found.items() if c not in set(Code)}
    assert not unknown, f"codes not in games.errors.Code: {unknown}"


def test_the_engine_codes_are_part_of_it_and_every_kind_has_a_status() -> None:
    assert set(Code) >= ENGINE_CODES
    assert set(STATUS) == set(Kind)
    assert all(member.name == member.value for member in Code)


def test_an_unknown_code_or_kind_is_refused_where_it_is_raised() -> None:
    with pytest.raises(AssertionError, match="unknown error code"):
        ServiceError("no_such_code", "x", kind="rules")
    with pytest.raises(ValueError):
        ServiceError("not_found", "x", kind="nonsense")
    error = ServiceError("stale_version", "moved on", kind="conflict", version=7)
    assert (error.status, error.body()) == (
        409,
        {"code": "stale_version", "detail": "moved on", "version": 7},
    )


def test_graphql_error_codes_are_an_enum_of_the_same_codes() -> None:
    schema = (ROOT / "schema.graphql").read_text()
    block = re.search(r"enum ErrorCode \{(.*?)\}", schema, flags=re.S)
    assert block is not None
    values = set(re.findall(r"^\s+([a-z_]+)\s*$", block.group(1), flags=re.M))
    assert values == {c.value for c in Code}
    assert re.search(r"type Error \{[^}]*code: ErrorCode!", schema, flags=re.S)


def test_the_documented_error_table_is_the_vocabulary() -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", (ROOT / "docs" / "errors.md").read_text(), flags=re.M))
    assert documented == {c.value for c in Code}, (
        f"missing from docs/errors.md: {sorted({c.value for c in Code} - documented)}; "
        f"not codes: {sorted(documented - {c.value for c in Code})}"
    )
