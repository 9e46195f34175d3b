"""What one seat (or a spectator) may see of a state and of events: built only from allowed fields."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .cards import PACK, card_name, names
from .deal import deal_commitment, pass_direction, pass_offset
from .errors import EngineError
from .options import CANCELLATION
from .state import GAME_OVER, MOON, PASSING, Event, State


def visible_events(events: Iterable[Event], seat: int | None) -> list[dict[str, Any]]:
    """The events `seat` may see (None: a spectator, who sees only public events), as dicts."""
    return [e.to_dict() for e in events if e.to is None or e.to == seat]


def view(state: State, seat: int | None, *, history: bool = True) -> dict[str, Any]:
    """The state as `seat` may see it: their own cards, their own pass, received cards once
    every seat has passed, the cards played, trick winners, points and scores; full deals only
    of finished hands (left out with `history=False`); the game seed only once the game is over."""
    opts = state.options
    n = opts.players
    if seat is not None and (type(seat) is not int or not 0 <= seat < n):
        raise EngineError(
            "invalid_seat", f"seat must be 0 to {n - 1}, or None for a spectator", seat=repr(seat)
        )
    off = pass_offset(opts, state.hand_no)
    out: dict[str, Any] = {
        "options": opts.to_dict(),
        "seat": seat,
        "hand_number": state.hand_no,
        "phase": state.phase,
        "dealer": state.dealer,
        "pass_direction": pass_direction(opts, state.hand_no),
        "deal_commitment": deal_commitment(state.seed, state.hand_no, state.table),
        "to_act": state.to_act(),
        "turn": state.turn if state.turn >= 0 else None,
        "hand_sizes": [h.bit_count() for h in state.hands],
        "hearts_broken": state.broken,
        "trick": _trick_cards(state.leader, state.trick, n) if state.trick else [],
        "leader": state.leader if state.leader >= 0 else None,
        "tricks": [_trick_view(state, leader, cards, winner) for leader, cards, winner in state.tricks],
        # The widow is face down until the hand is over: its points count only at scoring.
        "points_taken": [state.points_of(m & ~state.widow) for m in state.taken],
        "scores": list(state.totals),
        "scoresheet": [dict(row) for row in state.sheet],
        "winners": list(state.winners) if state.phase == GAME_OVER else None,
    }
    if history:
        out["previous_hands"] = [dict(r) for r in state.history]
    if state.phase == PASSING:
        out["passed"] = [bool(p) for p in state.passes]
    if opts.variant == CANCELLATION:
        out["widow"] = {"size": state.widow.bit_count(), "taken_by": _widow_taker(state)}
    if state.phase == MOON:
        out["moon"] = {"seat": state.shooter, "choices": ["subtract", "add"]}
    if state.phase == GAME_OVER:
        out["game_seed"] = state.seed
    if seat is not None:
        out["hand"] = names(state.hands[seat])
        mine = state.passes[seat] if off else 0
        out["my_pass"] = {"to": (seat + off) % n, "cards": names(mine)} if mine else None
        got = state.received[seat] if state.phase != PASSING else 0
        out["received"] = {"from": (seat - off) % n, "cards": names(got)} if got else None
        out["legal_actions"] = legal_view(state, seat)
    return out


def _trick_cards(leader: int, cards: Sequence[int], n: int) -> list[dict[str, Any]]:
    return [{"seat": (leader + i) % n, "card": card_name(c)} for i, c in enumerate(cards)]


def _trick_view(state: State, leader: int, cards: tuple[int, ...], winner: int) -> dict[str, Any]:
    mask = 0
    for c in cards:
        mask |= 1 << c
    return {
        "leader": leader,
        "cards": _trick_cards(leader, cards, state.options.players),
        "winner": None if winner < 0 else winner,
        "points": state.points_of(mask),
    }


def _widow_taker(state: State) -> int | None:
    if not state.widow or state.carried & state.widow:
        return None
    for s, m in enumerate(state.taken):
        if m & state.widow:
            return s
    return None


def legal_view(state: State, seat: int) -> dict[str, Any] | None:
    """The seat's legal actions in wire form (`view`'s `legal_actions`); a pass is described, not
    enumerated."""
    if state.phase == PASSING and not state.passes[seat]:
        return {"type": "pass", "count": 3, "from": names(state.hands[seat])}
    if state.phase == MOON and seat == state.shooter:
        return {"type": "moon", "choices": ["subtract", "add"]}
    if state.phase not in (PASSING, MOON, GAME_OVER) and seat == state.turn:
        m = state.legal_mask()
        return {"type": "play", "cards": names((m & ((1 << PACK) - 1)) | (m >> PACK))}
    return None
