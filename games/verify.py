"""Check a dealt hand after the fact: the revealed seed hashes to the commitment published at the
deal, and the deal recomputed from that seed is the one played. Needs only the engine (no server,
no database), so any player can run it:

    python -m games.verify --table 12 --seed <hand seed> --commitment <hex seen at the deal> \\
        [--players 4] [--variant classic] [--dealt hands.json]

`--dealt` is a JSON file holding the hands as dealt (the `record.dealt` list of
`GET /api/v1/tables/{id}/hands/{n}`, or of the `hand_revealed` event); without it the recomputed
deal is printed. A whole exported game (`GET /api/v1/tables/{id}/export`) is checked in one call:

    python -m games.verify --export game.json

which checks every hand's seed against its published commitment and against the game seed, the
deal recomputed from it, and replays the move log through the engine to the same hands, passes,
tricks and scores. Exit status 0 when everything matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hmac
import json
import sys
from collections.abc import Sequence
from typing import Any

from games.engine import Options, State, action_from_dict, deal, hand_seed, seed_commitment
from games.engine.cards import names


def check_deal(
    *,
    table: int | str,
    seed: str,
    commitment: str,
    options: Options,
    dealt: Sequence[Sequence[str]] | None = None,
) -> dict[str, Any]:
    """What matches: `commitment_ok` (SHA-256 of `<table>:<seed>` is the commitment), `deal_ok`
    (the deal recomputed from the seed is `dealt`; None when not given), and the recomputed hands."""
    expected = seed_commitment(seed, str(table))
    hands, widow = deal(options, seed)
    recomputed = [names(h) for h in hands]
    deal_ok = None
    if dealt is not None:
        deal_ok = [sorted(h) for h in recomputed] == [sorted(h) for h in dealt]
    return {
        "commitment_ok": hmac.compare_digest(expected, commitment.strip().lower()),
        "deal_ok": deal_ok,
        "dealt": recomputed,
        "widow": names(widow),
    }


_REPLAYED = ("pass", "play", "moon")


def check_export(document: dict[str, Any]) -> dict[str, Any]:
    """Check an exported game (games.exports) with the engine alone: per hand, the seed derives
    from the game seed, hashes to the commitment published at the deal and recomputes the deal;
    then the move log, replayed from the game seed, gives the same hand records and totals.
    `ok` is True only when everything matches; `problems` says what did not."""
    problems: list[str] = []
    try:
        options = Options.from_dict(document["options"])
        table, game_seed = str(document["table"]), document["game_seed"]
        hands = document["hands"]
        moves = document["moves"]
    except (KeyError, TypeError, ValueError) as exc:
        return {"ok": False, "hands": [], "replay_ok": False, "problems": [f"not an exported game: {exc}"]}
    checked = []
    for hand in hands:
        number = hand["hand"]
        result = check_deal(
            table=table,
            seed=hand["seed"],
            commitment=hand.get("published_commitment") or "",
            options=options,
            dealt=hand["dealt"],
        )
        seed_ok = hmac.compare_digest(hand_seed(game_seed, number), hand["seed"])
        checked.append(
            {
                "hand": number,
                "seed_ok": seed_ok,
                "commitment_ok": result["commitment_ok"],
                "deal_ok": result["deal_ok"],
            }
        )
        for what in ("seed_ok", "commitment_ok", "deal_ok"):
            if not checked[-1][what]:
                problems.append(f"hand {number}: {what.removesuffix('_ok')} does not match")
    try:
        state = State.new_game(options, game_seed, table=table)
        for move in moves:
            if move["kind"] in _REPLAYED:
                state.push(move["seat"], action_from_dict(move["action"]))
        replayed = [dict(record) for record in state.history]
    except Exception as exc:  # an illegal move in the log is a finding, not a crash
        problems.append(f"the move log does not replay: {exc}")
        replayed = None
    stated = [{k: v for k, v in hand.items() if k != "published_commitment"} for hand in hands]
    replay_ok = replayed == stated and replayed is not None and list(state.totals) == document.get("totals")
    if replayed is not None and not replay_ok:
        differ = [h["hand"] for h, r in zip(stated, replayed, strict=False) if h != r]
        problems.append(
            "the replayed game differs from the document"
            + (f" in hands {differ}" if differ else " (number of hands or totals)")
        )
    return {"ok": not problems, "hands": checked, "replay_ok": replay_ok, "problems": problems}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", help="an exported game (JSON): check all of it")
    parser.add_argument("--table", help="the table id")
    parser.add_argument("--seed", help="the hand's seed, revealed when the hand ended")
    parser.add_argument("--commitment", help="the deal_commitment published at the deal")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--dealt", help="JSON file with the hands as dealt, to compare")
    args = parser.parse_args(argv)
    if args.export:
        with open(args.export) as f:
            report = check_export(json.load(f))
        print(json.dumps(report, indent=2))
        print(
            "game verified" if report["ok"] else "MISMATCH: " + "; ".join(report["problems"]), file=sys.stderr
        )
        return 0 if report["ok"] else 1
    if not (args.table and args.seed and args.commitment):
        parser.error("--table, --seed and --commitment are required (or --export)")
    options = Options.from_dict({"players": args.players, "variant": args.variant})
    dealt = None
    if args.dealt:
        with open(args.dealt) as f:
            dealt = json.load(f)
    result = check_deal(
        table=args.table, seed=args.seed, commitment=args.commitment, options=options, dealt=dealt
    )
    print(json.dumps(result, indent=2))
    ok = result["commitment_ok"] and result["deal_ok"] is not False
    print("deal verified" if ok else "MISMATCH: this is not the deal that was committed to", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
