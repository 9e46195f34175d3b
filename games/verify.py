"""Check a dealt hand after the fact: the revealed seed hashes to the commitment published at the
deal, and the deal recomputed from that seed is the one played. Needs only the engine (no server,
no database), so any player can run it:

    python -m games.verify --table 12 --seed <hand seed> --commitment <hex seen at the deal> \\
        [--players 4] [--variant classic] [--dealt hands.json]

`--dealt` is a JSON file holding the hands as dealt (the `record.dealt` list of
`GET /api/v1/tables/{id}/hands/{n}`, or of the `hand_revealed` event); without it the recomputed
deal is printed. Exit status 0 when everything matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hmac
import json
import sys
from collections.abc import Sequence
from typing import Any

from games.engine import Options, deal, seed_commitment
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", required=True, help="the table id")
    parser.add_argument("--seed", required=True, help="the hand's seed, revealed when the hand ended")
    parser.add_argument("--commitment", required=True, help="the deal_commitment published at the deal")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--variant", default="classic")
    parser.add_argument("--dealt", help="JSON file with the hands as dealt, to compare")
    args = parser.parse_args(argv)
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
