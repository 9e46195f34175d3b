"""Strict request parsing for REST: the JSON parser and serializer fields that follow the schema exactly.

DRF is lenient by default: a CharField turns `5` into `"5"`, an IntegerField accepts `"0"`, and a
serializer ignores fields it does not know. Each of these hides a client's mistake, so here a
string field takes only strings, an integer field only integers, and a body naming a field the
operation does not have is refused (`invalid_input`, naming the field).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import Http404
from rest_framework import exceptions, parsers, serializers
from rest_framework.fields import SkipField, empty
from rest_framework.negotiation import BaseContentNegotiation, DefaultContentNegotiation

from hearts_service import jsonbody


class StrictJSONParser(parsers.JSONParser):
    """JSON bodies through hearts_service.jsonbody: bounded nesting, no NaN, UTF-8 only."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return jsonbody.loads(stream.read())
        except jsonbody.JSONBodyError as exc:
            raise exceptions.ParseError(exc.detail) from exc


class StrictCharField(serializers.CharField):
    """A string, and only a string (no number turned into text)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer, and only that (no "0", no true, no 1.0)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false, and only that (no "yes", no 1)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictChoiceField(serializers.ChoiceField):
    """One of the given strings, and only a string."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """A body that is an object with only the declared fields (an absent body counts as `{}`).
    Validate with `validated(TheSerializer, data)`; the class documents the body in OpenAPI."""

    @classmethod
    def check(cls, attrs: dict[str, Any]) -> None:
        """A rule across fields, on the validated values; none by default."""


class EmptyIn(StrictSerializer):
    """An operation without a body: nothing, or `{}`."""


class VersionedIn(StrictSerializer):
    """An operation whose only input is the version the client saw (also the If-Match header)."""

    expected_version = StrictIntegerField(required=False, min_value=0, help_text="The version you saw")


def validated(serializer_class: type[StrictSerializer], data: Any) -> dict[str, Any]:
    """The validated body of a StrictSerializer, or ValidationError (400 `invalid_input` naming the
    fields). The class's declared fields check the values directly: a serializer instance deep-
    copies all its fields first, which cost more than the rest of a play's parsing (bench/api.py).
    A serializer's cross-field rule is its `check(attrs)` class method."""
    if not isinstance(data, Mapping):
        kind = type(data).__name__
        raise serializers.ValidationError({"non_field_errors": [f"expected an object, got {kind}"]})
    fields = serializer_class._declared_fields
    errors: dict[str, Any] = {n: ["this field is not part of the request"] for n in data if n not in fields}
    out: dict[str, Any] = {}
    for name, field in fields.items():
        try:
            out[name] = field.run_validation(data.get(name, empty))
        except SkipField:
            continue
        except serializers.ValidationError as exc:
            errors[name] = exc.detail
    if errors:
        raise serializers.ValidationError(errors)
    serializer_class.check(out)
    return out


class JSONOnly(BaseContentNegotiation):
    """An Accept header (or a `?format=`) the API cannot satisfy gets its one representation (JSON)
    anyway: a client that asks for XML gets an answer it can read, never a 406 or a 404 with a
    generic code."""

    def select_parser(self, request: Any, parsers: list[Any]) -> Any:
        return DefaultContentNegotiation().select_parser(request, parsers)

    def select_renderer(self, request: Any, renderers: list[Any], format_suffix: str | None = None) -> Any:
        try:  # the schema view offers YAML and JSON: a client's choice there is kept
            return DefaultContentNegotiation().select_renderer(request, renderers, format_suffix)
        except (exceptions.NotAcceptable, Http404):  # Http404: DRF's answer to an unknown ?format=
            renderer = renderers[0]
            return renderer, renderer.media_type
