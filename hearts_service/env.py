"""Strict parsing of the environment: a value that does not parse stops start-up with a message naming
the variable and the value, instead of becoming a default, False or a bare ValueError.

Every reader takes the variable's name and its default; a variable that is unset or blank (`NAME=` in
an env file) has the default. `environ` replaces os.environ (tests). Kept apart from settings so the
rules can be tested directly (tests/service/test_foundation.py, tests/service/test_settings.py);
why not a library: docs/deploy.md ("Environment variables").
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    """The stripped value, or None when the variable is unset or blank."""
    value = (os.environ if environ is None else environ).get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _refuse(name: str, raw: str, expected: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"Environment variable {name}={raw!r} is not valid: {expected}.")


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """A flag: 1/true/yes/on or 0/false/no/off, in any case; any other value is refused."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    word = raw.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise _refuse(name, raw, "expected one of 1, true, yes, on, 0, false, no, off")


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" of at least {minimum}"
    if maximum is not None:
        return f" of at most {maximum}"
    return ""


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """A whole number (decimal digits, an optional sign; no fraction), within the bounds given."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    expected = f"expected a whole number{_bounds(minimum, maximum)}"
    if re.fullmatch(r"[+-]?[0-9]+", raw) is None:  # int() would also take 1_000 and other scripts' digits
        raise _refuse(name, raw, expected)
    value = int(raw)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _refuse(name, raw, expected)
    return value


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    """A finite number (`5`, `0.5`, `1e-3`), within the bounds given; nan and inf are refused."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    expected = f"expected a number{_bounds(minimum, maximum)}"
    try:
        value = float(raw) if raw.isascii() and "_" not in raw else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise _refuse(name, raw, expected)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _refuse(name, raw, expected)
    return value


def env_str(
    name: str,
    default: str,
    *,
    choices: Iterable[str] | None = None,
    lower: bool = False,
    upper: bool = False,
    pattern: str | None = None,
    expected: str = "",
    secret: bool = False,
    environ: Mapping[str, str] | None = None,
) -> str:
    """A string, stripped (and lower- or upper-cased). With `choices` it must be one of them; with
    `pattern` it must match it whole (`expected` says what in words). A `secret` value (a URL with a
    password) is never repeated in the message."""
    value = _raw(name, environ) or default
    if lower:
        value = value.lower()
    elif upper:
        value = value.upper()
    if choices is not None:
        allowed = list(choices)
        if value not in allowed:
            raise _refuse(name, value, "expected one of " + ", ".join(allowed))
    if pattern is not None and value and re.fullmatch(pattern, value) is None:
        if secret:
            raise ImproperlyConfigured(
                f"Environment variable {name} is not valid: expected {expected or pattern}."
            )
        raise _refuse(name, value, f"expected {expected or pattern}")
    return value


def env_list(name: str, default: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list, tolerating the stray spaces and commas of hand-written env files; the
    default only when unset (set and blank: an empty list)."""
    source = os.environ if environ is None else environ
    raw = source.get(name)
    if raw is None:
        raw = default
    return [item.strip() for item in raw.split(",") if item.strip()]
