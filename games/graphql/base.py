"""GraphQL mutations in one shape: a base class that runs its operation (games/operations) and answers
every refusal as a typed error in the payload, never raised, through one error mapper.

A mutation names its operation and its payload, declares its arguments (`arguments_of` takes them,
with their descriptions, from the operation's input) and, where GraphQL's shape differs from the
input's (a list of seats for REST's map), turns its arguments into the input (`input_of`). What it
answers on success is `answer`. Who may call it, the checks of its input, the version and
idempotency rules and the service call are the operation's, shared with REST.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

import graphene
from graphene.utils.str_converters import to_camel_case
from graphene_django.rest_framework.serializer_converter import convert_serializer_field
from rest_framework import serializers
from rest_framework.fields import empty

from games import messages
from games.accounts import Principal
from games.errors import ServiceError
from games.graphql.types import Error, Table, TableRef
from games.operations.base import Access, Operation
from games.services import Idempotency, Outcome

if TYPE_CHECKING:  # types only: the adapters never touch the ORM
    from games.models import App

_FIELD_DETAILS = ("option", "clock", "field")  # the details of a ServiceError that name an input field
VERSION_ARGUMENT = "The version you saw: stale gets stale_version"
KEY_ARGUMENT = "A retry with the same key never acts twice"


def error_of(exc: ServiceError | serializers.ValidationError) -> Error:
    """The one error mapper: a refusal as a typed error; `field` is named as in the GraphQL input
    (`botThinkMs`). An input that its operation's checks refuse is `invalid_input`, naming the
    first field at fault, as REST's 400 names them all."""
    if isinstance(exc, serializers.ValidationError):
        detail = exc.detail if isinstance(exc.detail, dict) else {"input": exc.detail}
        name, problems = next(iter(detail.items()))
        text = "; ".join(str(p) for p in problems) if isinstance(problems, list) else str(problems)
        message = messages.detail("invalid_input", f"{name}: {text}")
        return Error(code="invalid_input", message=message, field=to_camel_case(str(name)))
    field = next((str(exc.details[k]) for k in _FIELD_DETAILS if k in exc.details), None)
    limit = exc.details.get("limit")
    return Error(
        code=exc.code,
        message=exc.detail,
        field=to_camel_case(field) if field else None,
        quota=exc.details.get("quota"),
        limit=limit if isinstance(limit, int) else None,
    )


def principal_of(info: Any) -> Principal:
    """The caller, authenticated by the view from `Authorization: Bearer ...`."""
    principal = getattr(info.context, "principal", None)
    if principal is None:
        raise ServiceError("not_authenticated", "send 'Authorization: Bearer <key or token>'", kind="auth")
    assert isinstance(principal, Principal)
    return principal


def app_of(info: Any, denied: str) -> App:
    """The caller's app, for a query only an app key may make (app_key_required otherwise)."""
    return principal_of(info).require_app(denied)


def arguments_of(operation: Operation, **own: Any) -> dict[str, Any]:
    """The arguments of a mutation: the values the REST path gives (`tableId`), then each field of
    its operation's input as graphene-django converts a serializer field (type, required,
    description) unless `own` gives GraphQL's own shape of it (None: no such argument), and
    `expectedVersion` and `idempotencyKey` when the operation takes them."""
    arguments: dict[str, Any] = {}
    for name in operation.path:
        if name in own:
            continue
        kind = graphene.Int if name.endswith("_id") else graphene.String  # table_id; an invite's code
        arguments[name] = kind(required=True)
    for name, field in operation.input._declared_fields.items():
        if name in own or name == "expected_version":
            continue
        arguments[name] = argument_of(field)
    arguments |= {name: argument for name, argument in own.items() if argument is not None}
    if operation.versioned:
        arguments["expected_version"] = graphene.Int(description=VERSION_ARGUMENT)
    if operation.idempotent:
        arguments["idempotency_key"] = graphene.String(description=KEY_ARGUMENT)
    return arguments


def argument_of(field: serializers.Field[Any, Any, Any, Any]) -> Any:
    """One input field as an argument: graphene-django's conversion of a serializer field, with
    the field's default shown in the schema, and a list's items non-null (a list takes no nulls)."""
    if isinstance(field, serializers.ListField):
        child = type(convert_serializer_field(field.child, is_input=True))
        return graphene.List(graphene.NonNull(child), required=field.required, description=field.help_text)
    argument = convert_serializer_field(field, is_input=True)
    if field.default is not empty and not callable(field.default) and field.default is not None:
        argument.kwargs["default_value"] = field.default
    return argument


class OperationMutation(graphene.Mutation):
    """A mutation that runs one operation. Subclasses give `operation` in Meta and their Output."""

    class Meta:
        abstract = True

    operation: ClassVar[Operation]
    # GraphQL's own shape of some fields of the input, by input name (None: not an argument); the
    # others are converted from the input's fields.
    shaped: ClassVar[dict[str, Any]] = {}

    @classmethod
    def __init_subclass_with_meta__(  # type: ignore[override]  # graphene's hook takes its options as keywords
        cls, operation: Operation | None = None, _meta: Any = None, **options: Any
    ) -> None:
        if operation is not None:
            cls.operation = operation
            # The operation's description, unless the class has its own (a typed variant of it).
            options.setdefault("description", cls.__dict__.get("__doc__") or operation.description)
            options.setdefault("arguments", arguments_of(operation, **cls.shaped))
        super().__init_subclass_with_meta__(_meta=_meta, **options)

    @classmethod
    def input_of(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        """The operation's input from the arguments (the path's values and the idempotency key
        apart): by default the arguments given, but a null where the input takes none (graphene
        passes an omitted argument as absent, an explicit null as None)."""
        fields = cls.operation.input._declared_fields
        nullable = {name for name, field in fields.items() if field.allow_null}
        return {k: v for k, v in arguments.items() if v is not None or k in nullable}

    @classmethod
    def output_type(cls) -> Any:
        """The payload type (the subclass's Output)."""
        meta: Any = cls._meta  # graphene sets it on each subclass (None on the abstract bases)
        return meta.output

    @classmethod
    def context_of(cls, info: Any) -> dict[str, Any]:
        """Values of the operation's path that GraphQL takes from the request, not from arguments."""
        return {}

    @classmethod
    def mutate(cls, root: Any, info: Any, **arguments: Any) -> Any:
        operation = cls.operation
        try:
            principal = None if operation.access is Access.ANYONE else principal_of(info)
            if principal is not None:
                operation.allowed(principal)
            key = arguments.pop("idempotency_key", None)
            path = {name: arguments.pop(name) for name in operation.path if name in arguments}
            if not operation.versioned:
                arguments.pop("expected_version", None)  # deprecated where an operation takes none
            data = operation.parse(cls.input_of(arguments)) | path | cls.context_of(info)
            idem = None
            if operation.idempotent and principal is not None:
                fingerprint = {**path, **arguments}
                idem = Idempotency.for_table(principal, key, f"graphql {cls.__name__}", fingerprint)
            out = operation(principal, data, idem)
        except (ServiceError, serializers.ValidationError) as exc:
            return cls.refused(error_of(exc))
        return cls.answer(info, principal, out)

    @classmethod
    def refused(cls, error: Error) -> Any:
        """The payload of a refusal: only `errors` (the other fields null or false)."""
        return cls.output_type()(errors=[error])

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Any) -> Any:
        """The payload of a success: the operation's answer (a dict) and no errors."""
        return cls.output_type()(**(out or {}), errors=[])


class TablePayload(graphene.ObjectType):
    table = graphene.Field(Table, description="The table as you see it after the action (null on error)")
    errors = graphene.List(graphene.NonNull(Error), required=True)
    replayed = graphene.Boolean(
        required=True, description="True when this repeated an idempotency key: nothing acted again"
    )


class TableMutation(OperationMutation):
    """A change to a table: answers the table as the caller sees it after it; a repeated
    idempotency key answers the table exactly as the first request saw it."""

    class Meta:
        abstract = True

    @classmethod
    def refused(cls, error: Error) -> TablePayload:
        return TablePayload(table=None, errors=[error], replayed=False)

    @classmethod
    def answer(cls, info: Any, principal: Principal | None, out: Outcome) -> TablePayload:
        assert principal is not None
        if out.response is not None:
            ref = TableRef(principal, out.table, json.loads(out.response[1]))
        else:
            assert out.table is not None
            ref = TableRef(principal, out.table)
        return TablePayload(table=ref, errors=[], replayed=out.replayed)
