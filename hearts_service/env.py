"""Environment parsing kept apart from settings so the rules for reading values can be tested directly."""

import os
from collections.abc import Mapping

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Read a flag so that operators can write 1/true/yes/on in any case; anything else is false."""
    source = os.environ if environ is None else environ
    raw = source.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in TRUE_WORDS


def env_list(name: str, default: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Read a comma-separated list, tolerating the stray spaces and commas of hand-written env files."""
    source = os.environ if environ is None else environ
    raw = source.get(name)
    if raw is None:
        raw = default
    return [item.strip() for item in raw.split(",") if item.strip()]
