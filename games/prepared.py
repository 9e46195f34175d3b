"""Hot queries compiled to SQL once per process instead of on every call (issue 37).

Django compiles a queryset's SQL each time it is evaluated: for the few queries every action runs
(the table row read and locked, the token of a request, a stream's moves, the app's webhook
endpoints) that compiling was a third of the web processes' and the bot workers' CPU under load,
more than running them. A `Prepared` query is built once from an ordinary queryset with stand-in
values for its parameters; its SQL, its selected columns and the converters of its fields (JSON
fields, dates) are kept, and each call substitutes the real values, runs the SQL on the same
connection Django would use, and builds the model instances as Django's own iterator does (related
objects of `select_related` and annotations included). The queryset is the single definition: what
a call returns is what evaluating it would return.

Only fixed-shape queries fit (each parameter one value: no `__in` lists whose length varies);
a connection's vendor is part of the key, so SQLite and PostgreSQL each get their own SQL.

`PreparedUpdate` is the same for an UPDATE of named columns of one model's rows matched by named
columns (`.filter(...).update(...)` compiles both each time): its SQL is made once from the
model's own table and column names, each value goes through its field's `get_db_prep_save` (what
Django's own save does), and the number of rows changed is returned, so a conditional update (a
claim still held, a status still pending) says whether it applied. `PreparedInsert` writes model
instances (`bulk_create`, optionally ignoring conflicts) with its SQL made once per vendor and
number of rows, the values prepared as Django's insert prepares them (`pre_save`, then
`get_db_prep_save`: auto_now_add stamps included).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.constants import OnConflict
from django.db.models.query import get_related_populators

M = TypeVar("M", bound=Model)

# Stand-ins for the parameters while the SQL is compiled: values no caller passes, found again in
# the compiled parameters by type and value (a constant of the query, such as `active=True`, is
# never mistaken for one). An int stand-in lies within a 32-bit integer field's range: Django drops
# a lookup whose value a field cannot hold (or refuses the query), and a parameter not found again
# is refused here (ValueError) rather than compiled away.
_STAND_INS: dict[type, Callable[[int], Any]] = {
    int: lambda i: 2_146_000_000 + i,
    str: lambda i: f"\x00prepared-parameter-{i}\x00",
    uuid.UUID: lambda i: uuid.UUID(int=(0xF00D << 112) + i),
}


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _adapter(compiled: Any, stand_in: Any) -> Callable[[Any], Any] | None:
    """How a caller's value takes the place of `stand_in` where the compiled parameters hold
    `compiled`: wrapped in the class the backend gave the stand-in (psycopg's Int4 says which
    integer type PostgreSQL is sent); a UUID as the backend keeps it (PostgreSQL's own type, or
    SQLite's 32 hex digits). None when `compiled` is not this stand-in."""
    if isinstance(stand_in, uuid.UUID):
        if compiled == stand_in:
            return _as_uuid
        if compiled == stand_in.hex:
            return lambda value: _as_uuid(value).hex
        return None
    if isinstance(compiled, type(stand_in)) and compiled == stand_in:
        return type(compiled)
    return None


class _Compiled:
    __slots__ = (
        "annotations",
        "converters",
        "fields",
        "init_list",
        "klass_info",
        "model",
        "params",
        "select",
        "slots",
        "sql",
    )

    def __init__(self, queryset: QuerySet[Any], stand_ins: Sequence[Any], using: str) -> None:
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        self.sql = sql
        self.params = list(params)
        # (position in params, argument index, how the argument is adapted: see _adapter)
        self.slots: list[tuple[int, int, Callable[[Any], Any]]] = []
        for position, value in enumerate(self.params):
            for index, stand_in in enumerate(stand_ins):
                adapt = _adapter(value, stand_in)
                if adapt is not None:
                    self.slots.append((position, index, adapt))
        if sorted(index for _, index, _ in self.slots) != list(range(len(stand_ins))):
            raise ValueError(f"a prepared query must use each parameter once: {sql}")
        self.select, self.klass_info = compiler.select, compiler.klass_info
        assert self.klass_info is not None
        self.model = self.klass_info["model"]
        fields = self.klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        self.fields = (start, end)
        self.init_list = [f[0].target.attname for f in self.select[start:end]]
        self.converters = compiler.get_converters([s[0] for s in self.select])
        self.annotations = dict(compiler.annotation_col_map or {})  # name: position in the row


class Prepared(Generic[M]):
    """A query of model instances whose SQL is compiled once per process and database vendor.
    `build(*args)` returns the queryset for these arguments (`types`: the type of each, int, str
    or uuid.UUID); calling the Prepared with arguments returns the list of instances, as `list(build(*args))`
    would."""

    def __init__(self, build: Callable[..., QuerySet[M]], types: Sequence[type]) -> None:
        self.build = build
        self.types = tuple(types)
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._lock = threading.Lock()

    def _get(self, using: str) -> _Compiled:
        connection = connections[using]
        key = (using, connection.vendor)
        found = self._compiled.get(key)
        if found is None:
            stand_ins = [_STAND_INS[t](i) for i, t in enumerate(self.types)]
            found = _Compiled(self.build(*stand_ins), stand_ins, using)
            with self._lock:
                self._compiled[key] = found
        return found

    def __call__(self, *args: Any, using: str = "default") -> list[M]:
        compiled = self._get(using)
        params = list(compiled.params)
        for position, index, adapt in compiled.slots:
            params[position] = adapt(args[index])
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows: list[Any] = cursor.fetchall()
        if compiled.converters:
            rows = [list(row) for row in rows]
            for row in rows:
                for position, (converters, expression) in compiled.converters.items():
                    value = row[position]
                    for converter in converters:
                        value = converter(value, expression, connection)
                    row[position] = value
        start, end = compiled.fields
        populators = get_related_populators(compiled.klass_info, compiled.select, using)  # type: ignore[call-arg]  # django-stubs describe a later Django
        out: list[M] = []
        for row in rows:
            obj = compiled.model.from_db(using, compiled.init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, position in compiled.annotations.items():  # as Django's ModelIterable sets them
                setattr(obj, name, row[position])
            out.append(obj)
        return out

    def first(self, *args: Any, using: str = "default") -> M | None:
        """The first instance, or None (the queryset should have its own order and limit)."""
        found = self(*args, using=using)
        return found[0] if found else None


class PreparedUpdate:
    """`UPDATE <model's table> SET <set> WHERE <where>` (each a list of field names, "pk" for the
    primary key; a where field compared with `=`, or `IS NULL` when its value is None), its SQL made
    once per database vendor. Calling it with the set values, then the where values, in that order,
    returns how many rows it changed."""

    def __init__(self, model: type[Model], set_fields: Sequence[str], where_fields: Sequence[str]) -> None:
        meta = model._meta
        names = (*set_fields, *where_fields)
        self.fields = [meta.pk if name == "pk" else meta.get_field(name) for name in names]
        self.table = model._meta.db_table
        self.set_count = len(set_fields)
        self._sql: dict[tuple[str, str, tuple[bool, ...]], str] = {}

    def _text(self, using: str, nulls: tuple[bool, ...]) -> str:
        connection = connections[using]
        key = (using, connection.vendor, nulls)
        found = self._sql.get(key)
        if found is None:
            quote = connection.ops.quote_name
            columns = [quote(str(f.column)) for f in self.fields]  # type: ignore[union-attr]  # concrete fields
            sets = ", ".join(f"{c} = %s" for c in columns[: self.set_count])
            wheres = " AND ".join(
                f"{c} IS NULL" if null else f"{c} = %s"
                for c, null in zip(columns[self.set_count :], nulls, strict=True)
            )
            found = self._sql[key] = f"UPDATE {quote(self.table)} SET {sets} WHERE {wheres}"
        return found

    def __call__(self, *values: Any, using: str = "default") -> int:
        if len(values) != len(self.fields):
            raise TypeError(f"{len(self.fields)} values wanted, {len(values)} given")
        connection = connections[using]
        nulls = tuple(v is None for v in values[self.set_count :])
        params = [
            field.get_db_prep_save(value, connection)  # type: ignore[union-attr]
            for i, (field, value) in enumerate(zip(self.fields, values, strict=True))
            if i < self.set_count or value is not None
        ]
        with connection.cursor() as cursor:
            cursor.execute(self._text(using, nulls), params)
            return int(cursor.rowcount)


class PreparedInsert:
    """`INSERT INTO <model's table>` of instances, every concrete column but an automatic primary
    key (which the database assigns; it is not read back), skipping rows that break a unique
    constraint when `ignore_conflicts` (PostgreSQL's ON CONFLICT DO NOTHING, SQLite's INSERT OR
    IGNORE). Returns how many rows were written."""

    def __init__(self, model: type[Model], *, ignore_conflicts: bool = False) -> None:
        meta = model._meta
        self.fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        if any(hasattr(f, "get_placeholder") for f in self.fields):
            raise ValueError(f"{model.__name__} has a field with a placeholder of its own")
        self.table = meta.db_table
        self.conflict = OnConflict.IGNORE if ignore_conflicts else None
        self._sql: dict[tuple[str, str, int], str] = {}

    def _text(self, using: str, rows: int) -> str:
        connection = connections[using]
        key = (using, connection.vendor, rows)
        found = self._sql.get(key)
        if found is None:
            ops = connection.ops
            columns = ", ".join(ops.quote_name(str(f.column)) for f in self.fields)
            one = "(" + ", ".join(["%s"] * len(self.fields)) + ")"
            suffix = ops.on_conflict_suffix_sql(self.fields, self.conflict, None, None)
            statement = ops.insert_statement(on_conflict=self.conflict)
            values = ", ".join([one] * rows)
            found = f"{statement} {ops.quote_name(self.table)} ({columns}) VALUES {values} {suffix}".strip()
            self._sql[key] = found
        return found

    def __call__(self, objs: Sequence[Model], using: str = "default") -> int:
        if not objs:
            return 0
        connection = connections[using]
        params = [
            field.get_db_prep_save(field.pre_save(obj, True), connection)
            for obj in objs
            for field in self.fields
        ]
        with connection.cursor() as cursor:
            cursor.execute(self._text(using, len(objs)), params)
            return int(cursor.rowcount)
