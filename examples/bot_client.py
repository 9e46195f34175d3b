#!/usr/bin/env python3
"""A complete Hearts bot that plays through the public API, in the standard library only.

    python examples/bot_client.py --base http://localhost:8000 --token TOKEN --table 12 [--seat 1]
    python examples/bot_client.py --base http://localhost:8000 --guest Ada --create   # a quick demo

It takes a seat (already being seated is fine), follows the player stream (NDJSON, one event per
line), and on each `your_turn` of its table posts a legal action:

- pass: the three highest cards; play: the lowest legal card (`--strategy random`: any legal card,
  chosen from `--seed`, the table and the version, so a retry picks the same card); moon: "subtract".
- Every action carries `expected_version` (what it decided on) and an `Idempotency-Key` made of the
  table and that version, so a retry after a network error, or after a restart, can never act twice:
  the server answers a repeated key with the first answer.
- 409 `stale_version` (another seat acted first, e.g. while everyone passes): re-read the table and
  decide again on what it shows now.
- When the stream drops, it reconnects with the last event id (nothing missed, nothing repeated),
  backing off 1, 2, 4 ... 30 s. It exits 0 on its table's `table_finished`, printing the totals.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

RANKS = "23456789TJQKA"


class ApiError(Exception):
    def __init__(self, status: int, body: dict) -> None:
        super().__init__(f"{status} {body.get('code')}: {body.get('detail')}")
        self.status, self.code, self.body = status, body.get("code"), body


class Client:
    def __init__(self, base: str, token: str | None = None) -> None:
        self.base, self.token = base.rstrip("/") + "/api/v1", token

    def request(self, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
        """One JSON request; an error answer ({code, detail}) raises ApiError."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            try:
                body = json.loads(text)
            except ValueError:  # not the service answering (a proxy's error page)
                body = {"detail": text[:200]}
            raise ApiError(exc.code, body) from None

    def stream(self, last_event_id: str | None):
        """The player stream, one event dict per line; keep-alives (every 15 s) are skipped."""
        query = urllib.parse.urlencode(
            {"format": "ndjson", **({"last_event_id": last_event_id} if last_event_id else {})}
        )
        req = urllib.request.Request(f"{self.base}/me/stream?{query}")
        req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=60) as response:  # 60 s of silence: a dead link
            for line in response:
                event = json.loads(line) if line.strip() else {"type": "keepalive"}
                if event["type"] != "keepalive":
                    yield event


def rank(card: str) -> int:
    return RANKS.index(card[:-1].replace("10", "T"))


def choose(legal: dict, args: argparse.Namespace, version: int) -> dict:
    """A legal action from the `legal_actions` the server sent."""
    if legal["type"] == "pass":
        return {"type": "pass", "cards": sorted(legal["from"], key=rank)[-legal["count"] :]}
    if legal["type"] == "moon":
        return {
            "type": "moon",
            "choice": "subtract" if "subtract" in legal["choices"] else legal["choices"][0],
        }
    if args.strategy == "random":  # seeded per decision: the same decision after a restart
        return {
            "type": "play",
            "card": random.Random(f"{args.seed}:{args.table}:{version}").choice(legal["cards"]),
        }
    return {"type": "play", "card": min(legal["cards"], key=rank)}


def act(api: Client, args: argparse.Namespace, version: int, legal: dict) -> None:
    """Post one decision; retry network errors with the same key; on stale_version decide again.
    Still no answer after the retries: reconnecting the stream sends `your_turn` again if it is."""
    for attempt in range(8):
        body = {**choose(legal, args, version), "expected_version": version}
        try:
            api.request(
                "POST",
                f"/tables/{args.table}/actions",
                body,
                {"Idempotency-Key": f"bot-{args.table}-{version}"},
            )
            print(f"v{version}: {body}", flush=True)
            return
        except ApiError as exc:
            if exc.status >= 500:  # the server failed: the same key again cannot act twice
                time.sleep(min(2**attempt, 10))
                continue
            if exc.code != "stale_version":
                print(f"v{version}: refused: {exc}", file=sys.stderr, flush=True)
                return
        except (OSError, http.client.HTTPException) as exc:  # no answer: the same key cannot act twice
            print(f"v{version}: {exc}; retrying", file=sys.stderr, flush=True)
            time.sleep(min(2**attempt, 10))
            continue
        table = api.request("GET", f"/tables/{args.table}")  # stale: what does the table show now?
        game = table["game"] or {}
        if not game.get("legal_actions") or table["your_seat"] not in game.get("to_act", []):
            return  # no longer our turn: the stream will say when it is
        version, legal = table["version"], game["legal_actions"]
    raise ConnectionError(f"v{version}: no answer to the action")


def finished(table: dict) -> int:
    print(
        f"table {table.get('table', table.get('id'))} {table['status']}: totals {table['totals']}", flush=True
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="http://localhost:8000")
    parser.add_argument("--token", help="a player token (or use --guest)")
    parser.add_argument("--guest", metavar="NAME", help="create a guest player and use its token")
    parser.add_argument("--table", type=int, help="the table to play at")
    parser.add_argument("--create", action="store_true", help="create a table with three basic bots")
    parser.add_argument("--seat", type=int, help="the seat to take (default: the lowest open one)")
    parser.add_argument("--strategy", choices=["lowest", "random"], default="lowest")
    parser.add_argument("--seed", default="0", help="seed of --strategy random")
    args = parser.parse_args()
    api = Client(args.base, args.token)
    if not api.token:
        guest = Client(args.base).request("POST", "/guests", {"name": args.guest or "bot client"})
        api.token = guest["token"]
    if args.create:
        bots = {"1": "basic", "2": "basic", "3": "basic"}
        table = api.request("POST", "/tables", {"bots": bots})
        args.table, args.seat = table["id"], 0
        print(f"created table {args.table}", flush=True)
    if args.table is None:
        parser.error("give --table or --create")
    try:
        api.request(
            "POST", f"/tables/{args.table}/join", {} if args.seat is None else {"position": args.seat}
        )
    except ApiError:  # already seated (a restart), or the game started: are we in it?
        if api.request("GET", f"/tables/{args.table}")["your_seat"] is None:
            raise
    last, backoff = None, 1.0
    while True:
        try:
            for event in api.stream(last):
                last, backoff = event.get("id", last), 1.0
                if event["type"] == "tables" and args.table not in [t["id"] for t in event["tables"]]:
                    table = api.request("GET", f"/tables/{args.table}")  # over before we connected?
                    if table["status"] in ("finished", "abandoned"):
                        return finished({**table, "totals": (table["game"] or {}).get("scores")})
                if event.get("table") != args.table:
                    continue
                if event["type"] == "your_turn":
                    act(api, args, event["version"], event["legal_actions"])
                elif event["type"] == "table_finished":
                    return finished(event)
            raise ConnectionResetError("the server ended the stream")
        except urllib.error.HTTPError as exc:
            if exc.code < 500:  # refused (a bad token): reconnecting will not help
                raise
            print(f"stream refused ({exc}); reconnecting in {backoff:.0f} s", file=sys.stderr, flush=True)
        except (OSError, ValueError, http.client.HTTPException) as exc:  # dropped, timed out, cut mid-line
            print(
                f"stream lost ({exc!r}); resuming after {last} in {backoff:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        time.sleep(backoff)
        backoff = min(backoff * 2, 30)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ApiError as exc:  # refused for good: a bad token, no such table, no open seat
        sys.exit(f"refused: {exc}")
