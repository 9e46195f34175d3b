"""A table change carried in its wake-up: the row and new moves a commit wrote, for the streams.

The writer of a change (games.services.record.write, on PostgreSQL) has in hand what every web
process's stream feed would otherwise read back from the database right after the commit: the
table row as written, its state's JSON and its new moves' JSON (both already made for the write's
statement). `encode` puts them in the text of the wake-up (games.infra.notify), and `decode` turns
that text back into the Table and Move objects a shared read would have given (games.live.fanout),
so a feed that is up to date takes the change without a query. The message is internal, between
the service's own processes, like the database: it holds the hands, and only the streams' own
redaction (games.reads.visible_events, games.reads.table_body) decides what a viewer sees, as for
a shared read from the database. A change larger than MAX_CHARS is not carried (the feed reads it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models.fields.files import FieldFile

from games.models import Move, Table, compact_json, jsonb_text

MAX_CHARS = 64_000  # past this, the wake-up carries only the version (a long game's state)
_COLUMNS = [f.attname for f in Table._meta.concrete_fields]  # Model.from_db's order
_FIELDS = [f for f in Table._meta.concrete_fields if f.attname != "state"]  # the row, carried
_TIMES = {f.attname for f in _FIELDS if f.get_internal_type() == "DateTimeField"}


@dataclass(frozen=True)
class Change:
    """A committed change of a table: its row at `table.version` and its moves from `first` on."""

    table: Table
    first: int
    moves: list[Move]


def _plain(value: Any) -> str:
    """A column's value as JSON text: JSON columns (jsonb) in jsonb's key order, as read back."""
    if isinstance(value, dt.datetime):
        return compact_json(value.isoformat())
    if isinstance(value, FieldFile):
        return compact_json(value.name or "")
    return jsonb_text(value)


def encode(table: Table, first: int, moves_json: str, state_json: str | None) -> str | None:
    """The change of `table` as written: its row (every column, the state as `state_json`) and
    the moves `first` to its version (`moves_json`, the rows record.write inserted); None when
    too large to carry."""
    row = "[" + ",".join(_plain(f.value_from_object(table)) for f in _FIELDS) + "]"
    state = state_json or "null"
    text = f'{{"v":{table.version},"first":{first},"row":{row},"state":{state},"moves":{moves_json}}}'
    return text if len(text) <= MAX_CHARS else None


def decode(text: str) -> Change:
    """The Table and its new Moves (with the fields the streams read: seq and events) from
    `encode`'s text. Raises ValueError (or KeyError, TypeError) on a text it did not make."""
    data = orjson.loads(text)
    row = {f.attname: v for f, v in zip(_FIELDS, data["row"], strict=True)}
    row["state"] = data["state"]
    for name in _TIMES:
        if row[name] is not None:
            row[name] = dt.datetime.fromisoformat(row[name])
    table = Table.from_db("default", _COLUMNS, [row[name] for name in _COLUMNS])
    if table.version != data["v"]:
        raise ValueError("the row's version is not the change's")
    moves = [Move.from_db("default", ["seq", "events"], [m["seq"], m["events"]]) for m in data["moves"]]
    return Change(table, int(data["first"]), moves)
