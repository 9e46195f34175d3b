"""A finished game as one document (deals, passes, tricks, points, seeds, move log) and as a transcript.

The document holds nothing that was ever hidden from a player and is not public once the game is
over: the deals, passes and seeds of every hand are revealed when the hand ends anyway, so only a
finished table can be exported. `games.verify.check_export` checks a document with the engine
alone: each hand's seed against the commitment published at its deal, the deal recomputed from
that seed, and the whole game replayed from the move log to the same hands and scores.
"""

from __future__ import annotations

from typing import Any

from games import bot_timing
from games.engine import Options
from games.errors import ServiceError
from games.models import HintCount, Move, Table
from games.reads import iso
from games.records import log as records

FORMAT = "hearts-game/1"
MOVE_KINDS = tuple(Move.Kind.values)  # what a logged move did
_ACTIONS = (Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)
_DIRECTIONS = {"left": "to the left", "right": "to the right", "across": "across", "hold": "none (hold)"}


def game_document(table: Table) -> dict[str, Any]:
    """The finished game `table` as one JSON document (`FORMAT`); refused with `not_finished`
    before the game is over, since the last hand's cards are still hidden then."""
    state = records.state(table) if table.status == Table.Status.FINISHED else None
    if state is None:
        raise ServiceError(
            "not_finished",
            "only a finished game can be exported: its last hand's cards are hidden until then",
            kind="rules",
        )
    commitments = {h.number: h.deal_commitment for h in records.hands(table)}
    log = records.moves(table)
    hands = []
    for record in state.history:
        hand = dict(record)
        hand["published_commitment"] = commitments.get(hand["hand"])
        hands.append(hand)
    moves = [
        {
            "seq": m.seq,
            "hand": m.hand,
            "kind": m.kind,
            "seat": m.position,
            "action": m.payload if m.kind in _ACTIONS else None,
            "at": iso(m.created_at),
        }
        for m in log
    ]
    totals = list(state.totals)
    over: list[list[Any]] = next((m.events for m in reversed(log) if m.kind in _ACTIONS), [])
    winners = next((e[1]["winners"] for e in over if e[0] == "game_over"), None)
    return {
        "format": FORMAT,
        "table": table.pk,
        "options": Options.from_dict(table.options).to_dict(),
        "clocks": bot_timing.turn_clocks(table.clocks),
        "game_seed": table.seed,
        "seats": [
            {"seat": s["position"], "name": s["name"], "player": s["player"], "bot": s["bot"]}
            for s in table.seating
        ],
        "started_at": next((m["at"] for m in moves if m["kind"] == Move.Kind.START), None),
        "finished_at": moves[-1]["at"] if moves else None,
        "hands": hands,
        "totals": totals,
        "winners": winners,
        "moves": moves,
        "hints": hints_mark(table),
    }


def hints_mark(table: Table) -> dict[str, Any]:
    """Whether the table allowed hints (docs/hints.md) and how many each seat was given, by seat
    number ("0": 3; seats given none are left out): a game played with hints is known."""
    given = HintCount.objects.filter(table=table, count__gt=0).values_list("seat", "count")
    return {"allowed": bool(table.hints), "given": {str(seat): n for seat, n in given}}


def transcript(document: dict[str, Any]) -> str:
    """The document as plain text a person can read: seats, then every hand (deal, passes, each
    trick with its winner, points and running totals), then the result."""
    names = {
        s["seat"]: s["name"] or (f"bot ({s['bot']})" if s["bot"] else f"seat {s['seat']}")
        for s in document["seats"]
    }
    options = document["options"]
    lines = [
        f"Hearts, table {document['table']}: {options['players']} players, {options['variant']}, "
        f"to {options['target_score']} points",
        f"Started {document['started_at']}, finished {document['finished_at']}",
        "Seats: " + ", ".join(f"{seat}: {name}" for seat, name in sorted(names.items())),
        "",
    ]
    for hand in document["hands"]:
        passing = _DIRECTIONS.get(hand["pass_direction"], hand["pass_direction"])
        lines.append(f"Hand {hand['hand']} (dealer {names[hand['dealer']]}, passing {passing})")
        lines.append(f"  seed {hand['seed']}, commitment {hand['deal_commitment']}")
        for seat, cards in enumerate(hand["dealt"]):
            lines.append(f"  {names[seat]} was dealt {' '.join(cards)}")
        if hand["widow"]:
            lines.append(f"  widow: {' '.join(hand['widow'])}")
        for seat, passed in enumerate(hand["passes"]):
            if passed["cards"]:
                lines.append(f"  {names[seat]} passed {' '.join(passed['cards'])} to {names[passed['to']]}")
        for number, trick in enumerate(hand["tricks"], start=1):
            players = len(trick["cards"])
            order = [(trick["leader"] + i) % len(names) for i in range(players)]
            played = ", ".join(
                f"{names[seat]} {card}" for seat, card in zip(order, trick["cards"], strict=True)
            )
            winner = "" if trick["winner"] is None else f"; won by {names[trick['winner']]}"
            lines.append(f"  trick {number}: {played}{winner}")
        if hand["moon"] is not None:
            lines.append(
                f"  {names[hand['moon']['seat']]} shot the moon and chose to {hand['moon']['choice']}"
            )
        lines.append("  points: " + ", ".join(f"{names[s]} {p}" for s, p in enumerate(hand["points"])))
        lines.append("  totals: " + ", ".join(f"{names[s]} {t}" for s, t in enumerate(hand["totals"])))
        lines.append("")
    mark = document.get("hints") or {}
    if mark.get("allowed"):
        given = mark.get("given") or {}
        asked = ", ".join(f"{names[int(s)]} {n}" for s, n in sorted(given.items(), key=lambda i: int(i[0])))
        lines.append("Hints were allowed at this table; hints given: " + (asked or "none"))
    winners = " and ".join(names[s] for s in document["winners"])
    lines.append("Final: " + ", ".join(f"{names[s]} {t}" for s, t in enumerate(document["totals"])))
    lines.append(f"Won by {winners}")
    return "\n".join(lines) + "\n"
