"""The inputs of the operations: strict fields (a string only a string, an integer only an integer),
the body that names only declared fields, and the request parts whose limits come from the domain.

DRF is lenient by default: a CharField turns `5` into `"5"`, an IntegerField accepts `"0"`, and a
serializer ignores fields it does not know. Each of these hides a client's mistake, so here a
string field takes only strings, an integer field only integers, and a body naming a field the
operation does not have is refused (`invalid_input`, naming the field). REST validates its JSON
body with these and GraphQL its arguments (games/operations: each operation's `input`); the
OpenAPI document describes them (drf-spectacular), and the GraphQL arguments take their
descriptions from the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers
from rest_framework.fields import SkipField, empty

from games.engine.options import OPTION_SPECS, QUIET_DEFAULTS, OptionSpec
from games.services.common import _CLOCK_LIMITS, CLOCK_DEFAULTS, SPECTATOR_DELAY_LIMITS, check_level

F = serializers  # short alias: the request parts are long lists of fields


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


# -- request parts with their real limits ----------------------------------------------------


def option_field(spec: OptionSpec, *, request: bool) -> F.Field:
    kw: dict[str, Any] = {"help_text": spec.help}
    if spec.name in QUIET_DEFAULTS and not request:
        kw |= {"required": False, "help_text": f"{spec.help} Absent at its default ({spec.default})."}
    if request:
        kw |= {"required": False, "default": spec.default}
    if spec.choices is not None:
        return F.ChoiceField(choices=list(spec.choices), **kw)
    if spec.kind is int:
        return F.IntegerField(min_value=spec.minimum, max_value=spec.maximum, **kw)
    return F.CharField(**kw)


def serializer_named(name: str, doc: str, fields: dict[str, F.Field]) -> type[F.Serializer]:
    return type(name, (F.Serializer,), {"__doc__": doc, "__module__": __name__, **fields})


# The engine's table options (games/engine/options.py), as sent (each optional) and as answered.
TableOptionsIn = extend_schema_serializer(component_name="TableOptions")(
    serializer_named(
        "TableOptionsIn",
        "Table options, each optional (its default otherwise); another key is refused with "
        "400 invalid_option. `players` is 3 to 7, or 6 to 10 with the cancellation variant.",
        {s.name: option_field(s, request=True) for s in OPTION_SPECS},
    )
)


def _clock_field(name: str) -> F.Field:
    low, high = _CLOCK_LIMITS[name]
    if name == "away_after":
        help_text = "Timeouts in a row before a seat is marked away"
    else:
        what = {"pass": "a pass", "play": "a play", "moon": "a moon choice"}[name]
        help_text = f"Seconds for {what} (null: no clock)"
    return F.IntegerField(
        min_value=low,
        max_value=high,
        required=False,
        default=CLOCK_DEFAULTS[name],
        allow_null=name != "away_after",
        help_text=help_text,
    )


# The turn clocks a table is created with (games/services/common.py checks them).
ClocksIn = extend_schema_serializer(component_name="Clocks")(
    serializer_named(
        "ClocksIn",
        "Turn clocks, each optional (its default otherwise); out of range or another key is 400 "
        "invalid_clock.",
        {name: _clock_field(name) for name in CLOCK_DEFAULTS},
    )
)


@extend_schema_field(TableOptionsIn)
class OptionsField(F.DictField):
    """The `options` map of a new table: checked by the engine, documented as TableOptions."""


@extend_schema_field(ClocksIn)
class ClocksField(F.DictField):
    """The `clocks` map of a new table: checked by the services, documented as Clocks."""


def _delay_variant(unit: str) -> dict[str, Any]:
    low, high = SPECTATOR_DELAY_LIMITS[unit]
    return {
        "type": "object",
        "properties": {unit: {"type": "integer", "minimum": low, "maximum": high}},
        "required": [unit],
        "additionalProperties": False,
    }


@extend_schema_field(
    {
        "oneOf": [_delay_variant(unit) for unit in SPECTATOR_DELAY_LIMITS],
        "type": "object",
        "description": 'Spectators see the table this much later: {"seconds": N} (0 to 600) or '
        '{"tricks": N} (0 to 13); absent or 0: live. Else 400 invalid_input.',
    }
)
class SpectatorDelayField(F.DictField):
    """The `spectator_delay` of a new table: checked by the services (games/services/common.py)."""


@extend_schema_field(
    {
        "type": "object",
        "description": 'Seats (as strings, "0" to "9") to fill with bots at once, each with its level; '
        "a seat the table does not have is 400 invalid_seat, a level that is not one is 400 "
        "invalid_bot_level.",
        "additionalProperties": {"$ref": "#/components/schemas/SeatLevel"},
        "example": {"1": "basic", "2": "strong", "3": "expert"},
    }
)
class BotsField(F.DictField):
    """The `bots` map of a new table: seat number -> bot level."""


@extend_schema_field({"$ref": "#/components/schemas/SeatLevel"})
class LevelField(StrictCharField):
    """A seat's bot level: a built-in one (`bots.LEVELS`) or `ext:<name>`, a bot the app brought
    (the services check that it names one; anything else is 400 `invalid_bot_level`)."""

    def to_internal_value(self, data: Any) -> str:
        level = super().to_internal_value(data)
        check_level(level)
        return level
