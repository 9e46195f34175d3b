"""JSON as the service stores it (games.models): jsonb's key order made without PostgreSQL, equal to
what a jsonb column gives back, and the state column's text read back as it was written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.models import JSONText, compact_json, jsonb_order, jsonb_text

_TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=6)
# JSON values as the service writes them: objects with string keys, arrays, strings (a brace in
# some: the arrays holding one are walked), integers past 64 bits included, no floats.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _TEXT | st.sampled_from(["{", "}{", "a{b"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=25,
)


def _pairs(text: str) -> Any:
    """The parsed value with every object as its list of (key, value) pairs: the keys' order kept."""
    return json.loads(text, object_pairs_hook=list)


def _by_hand(value: Any) -> Any:
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: _by_hand(value[k]) for k in keys}
    if isinstance(value, list):
        return [_by_hand(v) for v in value]
    return value


@given(JSON)
def test_the_text_and_the_copy_hold_the_value_in_jsonbs_key_order(value: Any) -> None:
    expected = json.dumps(_by_hand(value), separators=(",", ":"))
    assert _pairs(jsonb_text(value)) == _pairs(expected)
    ordered = jsonb_order(value)
    assert json.dumps(ordered) == json.dumps(_by_hand(value))
    assert compact_json(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_the_ordered_copy_shares_nothing_with_the_value() -> None:
    value = {"bb": [[1, 2], [3]], "a": {"z": [4]}}
    ordered = jsonb_order(value)
    ordered["bb"][0].append(9)
    ordered["a"]["z"].append(9)
    assert value == {"bb": [[1, 2], [3]], "a": {"z": [4]}}


@pytest.mark.needs_postgres
@pytest.mark.django_db
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON)
def test_the_order_is_the_one_a_jsonb_column_gives_back(value: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT (%s::jsonb)::text", [compact_json(value)])
        (stored,) = cursor.fetchone()
    assert _pairs(jsonb_text(value)) == _pairs(stored)


def test_the_state_column_reads_back_what_it_wrote_and_what_json_alone_reads() -> None:
    field = JSONText()
    state = {"hands": ["b000e00095051"], "sheet": [{"hand": 1, "moon": None}], "név": "é"}
    for vendor in ("postgresql", "sqlite"):
        written = field.get_db_prep_value(state, type("C", (), {"vendor": vendor})())
        assert field.from_db_value(written, None, connection) == state
    # NaN is JSON to Python's json module (not to orjson): still read, as a JSONField reads it
    assert field.from_db_value('{"x":NaN}', None, connection)["x"] != 0
    assert field.from_db_value(None, None, connection) is None
