"""Lossless JSON form of a state: masks as hex strings, everything else plain JSON values."""

from __future__ import annotations

import json
from typing import Any

from .errors import EngineError
from .options import Options
from .state import State

FORMAT = 1
_MASKS = {"widow", "carried"}
_MASK_TUPLES = {"hands", "dealt", "passes", "received", "taken"}
_INT_TUPLES = {"totals", "winners"}


def state_to_dict(state: State) -> dict[str, Any]:
    """A JSON-ready dict that `state_from_dict` turns back into an equal state."""
    out: dict[str, Any] = {"format": FORMAT}
    for f in State.FIELDS:
        v = getattr(state, f)
        if f == "options":
            v = v.to_dict()
        elif f in _MASKS:
            v = format(v, "x")
        elif f in _MASK_TUPLES:
            v = [format(m, "x") for m in v]
        elif f in _INT_TUPLES or f == "trick":
            v = list(v)
        elif f == "tricks":
            v = [[leader, list(cards), winner] for leader, cards, winner in v]
        elif f in ("sheet", "history"):
            v = list(v)
        out[f] = v
    return out


def state_from_dict(data: dict[str, Any]) -> State:
    """Rebuild a state from `state_to_dict` output (for example loaded from the database)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EngineError("invalid_state", "not a serialised state of a known format")
    st = object.__new__(State)
    try:
        for f in State.FIELDS:
            v = data[f]
            if f == "options":
                v = Options.from_dict(v)
            elif f in _MASKS:
                v = int(v, 16)
            elif f in _MASK_TUPLES:
                v = tuple(int(m, 16) for m in v)
            elif f in _INT_TUPLES or f == "trick":
                v = tuple(v)
            elif f == "tricks":
                v = tuple((leader, tuple(cards), winner) for leader, cards, winner in v)
            elif f in ("sheet", "history"):
                v = tuple(v)
            setattr(st, f, v)
    except (KeyError, TypeError, ValueError) as exc:
        raise EngineError("invalid_state", f"serialised state is damaged: {exc}") from exc
    st._legal = None
    return st


def dumps(state: State) -> str:
    return json.dumps(state_to_dict(state), separators=(",", ":"), sort_keys=True)


def loads(text: str) -> State:
    return state_from_dict(json.loads(text))
