#!/usr/bin/env python3
"""A complete Hearts bot on the Python SDK (`pip install -e clients/python`; docs/clients.md).

    python examples/bot_client.py --base http://localhost:8000 --token TOKEN --table 12 [--seat 1]
    python examples/bot_client.py --base http://localhost:8000 --guest Ada --create   # a quick demo
    python examples/bot_client.py ... --socket   # the whole game over one WebSocket (GraphQL)

The bot's logic is the `Lowest` class: pass the three highest cards, play the lowest legal card
(`--strategy random`: any legal card, seeded by `--seed`, the table and the version, so a restarted
bot decides the same). `hearts_client.Bot` does the rest: it takes the seat, follows the table's
stream (resumed after a drop), acts on each `your_turn` with `If-Match` and an Idempotency-Key made
of the table, seat and version (a retry or a restart never acts twice), and decides again on a
`stale_version`. It exits 0 when the table is over, printing the totals. With `--socket` it plays over
one WebSocket instead of REST and SSE: the `tableEvents` subscription, the `table` query and the
`joinTable` and `submitAction` mutations, resumed after a dropped socket with the same rules.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys

from hearts_client import Bot, Game, HeartsClient, HeartsError, LegalActions

RANKS = "23456789TJQKA"


def rank(card: str) -> int:
    return RANKS.index(card[:-1].replace("10", "T"))


class Lowest(Bot):
    def __init__(self, strategy: str = "lowest", seed: str = "0") -> None:
        self.strategy, self.seed = strategy, seed

    def choose_pass(self, view: Game, legal: LegalActions) -> list[str]:
        return sorted(legal["from"], key=rank)[-legal["count"] :]

    def choose_play(self, view: Game, legal: LegalActions) -> str:
        if self.strategy == "random":  # seeded per decision: the same card after a restart
            key = f"{self.seed}:{view['hand_number']}:{len(view['hand'])}:{view['trick']}"
            return random.Random(key).choice(legal["cards"])
        return min(legal["cards"], key=rank)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", default="http://localhost:8000")
    parser.add_argument("--token", help="a player token (or use --guest)")
    parser.add_argument("--guest", metavar="NAME", help="create a guest player and use its token")
    parser.add_argument("--table", type=int, help="the table to play at")
    parser.add_argument("--create", action="store_true", help="create a table with three basic bots")
    parser.add_argument("--seat", type=int, help="the seat to take (default: the lowest open one)")
    parser.add_argument("--strategy", choices=["lowest", "random"], default="lowest")
    parser.add_argument("--seed", default="0", help="seed of --strategy random")
    parser.add_argument("--socket", action="store_true", help="play over one GraphQL WebSocket")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    if args.token:
        client = HeartsClient(args.base, args.token)
    else:
        client = HeartsClient.as_guest(args.base, args.guest or "bot client")
    if args.create:
        # bot_pace_ms=0: the server paces bots at a person's table so that a person can follow the
        # trick; a program needs no pause, and a whole game then takes seconds, not minutes.
        table = client.tables.create(bots={1: "basic", 2: "basic", 3: "basic"}, bot_pace_ms=0)
        args.table, args.seat = table["id"], 0
        print(f"created table {args.table}", flush=True)
    if args.table is None:
        parser.error("give --table or --create")
    with client:
        table = Lowest(args.strategy, args.seed).run(client, args.table, args.seat, socket=args.socket)
    totals = table["game"]["scores"] if table["game"] else None
    print(f"table {table['id']} {table['status']}: totals {totals}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HeartsError as exc:  # refused for good: a bad token, no such table, no open seat
        sys.exit(f"refused: {exc}")
