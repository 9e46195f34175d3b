"""Hot queries compiled to SQL once per process instead of on every call (issue 37).

Django compiles a queryset's SQL each time it is evaluated: for the few queries every action runs
(the table row read and locked, the token of a request, a stream's moves, the app's webhook
endpoints) that compiling was a third of the web processes' and the bot workers' CPU under load,
more than running them. A `Prepared` query is built once from an ordinary queryset with stand-in
values for its parameters; its SQL, its selected columns and the converters of its fields (JSON
fields, dates) are kept, and each call substitutes the real values, runs the SQL on the same
connection Django would use, and builds the model instances as Django's own iterator does (related
objects of `select_related` included). The queryset is the single definition: what a call returns
is what evaluating it would return.

Only fixed-shape queries fit (each parameter one value: no `__in` lists whose length varies);
a connection's vendor is part of the key, so SQLite and PostgreSQL each get their own SQL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
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
}


class _Compiled:
    __slots__ = (
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
        # (position in params, argument index, the class the backend gave it: psycopg's Int4 says
        # which integer type PostgreSQL is sent, and the real value is wrapped the same way)
        self.slots: list[tuple[int, int, type]] = []
        for position, value in enumerate(self.params):
            for index, stand_in in enumerate(stand_ins):
                if isinstance(value, type(stand_in)) and value == stand_in:
                    self.slots.append((position, index, type(value)))
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


class Prepared(Generic[M]):
    """A query of model instances whose SQL is compiled once per process and database vendor.
    `build(*args)` returns the queryset for these arguments (`types`: the type of each, int or
    str); calling the Prepared with arguments returns the list of instances, as `list(build(*args))`
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
        for position, index, cls in compiled.slots:
            params[position] = cls(args[index])
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
            out.append(obj)
        return out

    def first(self, *args: Any, using: str = "default") -> M | None:
        """The first instance, or None (the queryset should have its own order and limit)."""
        found = self(*args, using=using)
        return found[0] if found else None
