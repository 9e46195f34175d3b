"""Lossless JSON form of a state: card masks as hex strings, everything else plain JSON values."""

from __future__ import annotations

import json
from typing import Any, Final

from .errors import EngineError
from .options import Options
from .record import HandRecord
from .state import State

FORMAT: Final = 1
_MASKS: Final = ("widow", "carried")
_MASK_LISTS: Final = ("hands", "passes", "received", "taken")
_PLAIN: Final = ("seed", "hand_no", "phase", "dealer", "leader", "turn", "broken", "shooter")


def state_to_dict(state: State) -> dict[str, Any]:
    """A JSON-ready dict that `state_from_dict` turns back into an equal state."""
    out: dict[str, Any] = {"format": FORMAT, "options": state.options.to_dict(), "table": state.table}
    for f in _PLAIN:
        out[f] = getattr(state, f)
    for f in _MASKS:
        out[f] = format(getattr(state, f), "x")
    for f in _MASK_LISTS:
        out[f] = [format(m, "x") for m in getattr(state, f)]
    out["dealt"] = [format(m, "x") for m in state.dealt]
    out["trick"] = list(state.trick)
    out["tricks"] = [[leader, list(cards), winner] for leader, cards, winner in state.tricks]
    out["totals"] = list(state.totals)
    out["winners"] = list(state.winners)
    out["sheet"] = [dict(row) for row in state.sheet]
    out["history"] = [r.to_json() for r in state.history]
    return out


def state_from_dict(data: dict[str, Any]) -> State:
    """Rebuild a state from `state_to_dict` output (for example loaded from the database)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise EngineError("invalid_state", "not a serialised state of a known format")
    st = State.__new__(State)
    try:
        st.options = Options.from_dict(data["options"])
        st.table = str(data.get("table", ""))  # absent from states saved before tables were bound
        for f in _PLAIN:
            setattr(st, f, data[f])
        for f in _MASKS:
            setattr(st, f, int(data[f], 16))
        for f in _MASK_LISTS:
            setattr(st, f, [int(m, 16) for m in data[f]])
        st.dealt = tuple(int(m, 16) for m in data["dealt"])
        st.trick = [int(c) for c in data["trick"]]
        st.tricks = [(int(leader), tuple(cards), int(winner)) for leader, cards, winner in data["tricks"]]
        st.totals = [int(t) for t in data["totals"]]
        st.winners = tuple(data["winners"])
        st.sheet = [dict(row) for row in data["sheet"]]
        st.history = [HandRecord.from_json(r) for r in data["history"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise EngineError("invalid_state", f"serialised state is damaged: {exc}") from exc
    st._legal = None
    return st


def dumps(state: State) -> str:
    return json.dumps(state_to_dict(state), separators=(",", ":"), sort_keys=True)


def loads(text: str) -> State:
    return state_from_dict(json.loads(text))
