"""`Bot`: subclass it with `choose_pass` and `choose_play` (or one `act`) and it plays a table."""

from __future__ import annotations

import logging
from contextlib import aclosing, closing
from typing import TYPE_CHECKING

from hearts_client.asocket import AsyncSocket
from hearts_client.errors import Conflict, HeartsError, RulesError, StaleVersion
from hearts_client.models import Action, Event, Game, LegalActions, MoonChoice, Table
from hearts_client.socket import Socket

if TYPE_CHECKING:
    from hearts_client.aclient import AsyncHeartsClient
    from hearts_client.client import HeartsClient

log = logging.getLogger("hearts_client.bot")
_OVER = ("finished", "abandoned")


class Bot:
    """A seat played by code. `run(client, table_id)` takes a seat (or finds its own), follows the
    table's stream and, on each `your_turn`, reads the table and posts `act(view, legal)`:

    - `view` is the seat's view of the game (`hand`, `trick`, `scores`, ...), `legal` its
      `legal_actions`; the default `act` asks `choose_pass`, `choose_play` or `choose_moon`.
    - Each action carries the version it was decided on (`If-Match`) and the Idempotency-Key
      `bot-<table>-<seat>-<version>`, so a retry, or the same bot started again after a crash,
      never acts twice.
    - A 409 `stale_version` (the table moved on: another seat passed, a clock ran out) reads
      the table again and decides afresh; a refusal by the rules is logged and the bot waits for
      its next turn. The stream resumes by itself after a dropped connection.
    - `run(..., socket=True)` (and `arun`) plays over one WebSocket instead: it sits with the
      `joinTable` mutation, follows the `tableEvents` subscription, reads the table with the
      `table` query and acts with `submitAction`, all on one socket, resumed after a drop with
      the same rules (If-Match is `expectedVersion`, the same Idempotency-Key).
    """

    def choose_pass(self, view: Game, legal: LegalActions) -> list[str]:
        """The cards to pass: `legal["count"]` of `legal["from"]`. By default the first ones
        offered (legal, not clever): override it for a strategy."""
        return list(legal.get("from", []))[: legal.get("count", 0)]

    def choose_play(self, view: Game, legal: LegalActions) -> str:
        """The card to play: one of `legal["cards"]`. By default the first one offered (legal, not
        clever): override it for a strategy."""
        return legal["cards"][0]

    def choose_moon(self, view: Game, legal: LegalActions) -> MoonChoice:
        """After shooting the moon: `subtract` (26 from your score) unless only `add` is offered."""
        return "subtract" if "subtract" in legal.get("choices", ["subtract"]) else "add"

    def act(self, view: Game, legal: LegalActions) -> Action:
        if legal["type"] == "pass":
            return {"type": "pass", "cards": self.choose_pass(view, legal)}
        if legal["type"] == "moon":
            return {"type": "moon", "choice": self.choose_moon(view, legal)}
        return {"type": "play", "card": self.choose_play(view, legal)}

    def on_event(self, event: Event) -> None:
        """Every event of the table's stream, before the bot acts on it (override to watch)."""

    def stop(self) -> None:
        """Leave the table's stream after the current event (from `on_event`, for example): `run`
        returns the table as it is then."""
        self._stopped = True

    _stopped = False

    # -- the loop ------------------------------------------------------------------------------

    def run(
        self, client: HeartsClient, table_id: int, seat: int | None = None, *, socket: bool = False
    ) -> Table:
        """Play `table_id` until it is over; returns the table as it ended. With `socket`, over one
        WebSocket (GraphQL subscription and mutations) instead of REST and the SSE stream."""
        if socket:
            with client.socket() as ws:
                return self._run(ws, table_id, seat)
        return self._run(client, table_id, seat)

    def _run(self, client: HeartsClient | Socket, table_id: int, seat: int | None) -> Table:
        self._sit(client, table_id, seat)
        self._stopped = False
        if isinstance(client, Socket):
            events = iter(client.subscribe_table_events(table_id))
        else:
            events = iter(client.streams.table(table_id))
        with closing(events):
            for event in events:
                self.on_event(event)
                if self._stopped:
                    break
                if event["type"] == "your_turn":
                    self._turn(client, table_id)
        return self._read(client, table_id)

    def _sit(self, client: HeartsClient | Socket, table_id: int, seat: int | None) -> None:
        try:
            if isinstance(client, Socket):
                client.join_table(table_id, seat)
            else:
                client.tables.join(table_id, seat)
        except (Conflict, RulesError):  # already seated (a restart), or started: are we in it?
            if self._read(client, table_id)["your_seat"] is None:
                raise

    @staticmethod
    def _read(client: HeartsClient | Socket, table_id: int) -> Table:
        return client.get_table(table_id) if isinstance(client, Socket) else client.tables.get(table_id)

    def _turn(self, client: HeartsClient | Socket, table_id: int) -> None:
        for _ in range(client.retry.attempts):
            table = self._read(client, table_id)
            decision = self._decide(table)
            if decision is None:
                return  # no longer our turn: the stream will say when it is
            action, key = decision
            submit = client.submit_action if isinstance(client, Socket) else client.tables.act
            try:
                submit(table_id, action, version=table["version"], idempotency_key=key)
            except (StaleVersion, Conflict) as exc:  # moved on (or a key of a decision made before)
                log.info("table %s v%s: %s; deciding again", table_id, table["version"], exc.code)
                continue
            except RulesError as exc:
                log.warning("table %s v%s: %s refused: %s", table_id, table["version"], action, exc)
                return
            log.info("table %s v%s: %s", table_id, table["version"], action)
            return

    def _decide(self, table: Table) -> tuple[Action, str] | None:
        game, seat = table["game"], table["your_seat"]
        if table["status"] in _OVER or game is None or seat is None or seat not in game["to_act"]:
            return None
        legal = game.get("legal_actions")
        if not legal:
            return None
        return self.act(game, legal), f"bot-{table['id']}-{seat}-{table['version']}"

    async def arun(
        self, client: AsyncHeartsClient, table_id: int, seat: int | None = None, *, socket: bool = False
    ) -> Table:
        """`run` on the async client (`socket`: over one WebSocket)."""
        if socket:
            async with client.socket() as ws:
                return await self._arun(ws, table_id, seat)
        return await self._arun(client, table_id, seat)

    @staticmethod
    async def _aread(client: AsyncHeartsClient | AsyncSocket, table_id: int) -> Table:
        if isinstance(client, AsyncSocket):
            return await client.get_table(table_id)
        return await client.tables.get(table_id)

    async def _arun(self, client: AsyncHeartsClient | AsyncSocket, table_id: int, seat: int | None) -> Table:
        try:
            if isinstance(client, AsyncSocket):
                await client.join_table(table_id, seat)
            else:
                await client.tables.join(table_id, seat)
        except (Conflict, RulesError):
            if (await self._aread(client, table_id))["your_seat"] is None:
                raise
        self._stopped = False
        if isinstance(client, AsyncSocket):
            stream = aiter(client.subscribe_table_events(table_id))
        else:
            stream = aiter(client.streams.table(table_id))
        async with aclosing(stream) as events:
            async for event in events:
                self.on_event(event)
                if self._stopped:
                    break
                if event["type"] == "your_turn":
                    await self._aturn(client, table_id)
        return await self._aread(client, table_id)

    async def _aturn(self, client: AsyncHeartsClient | AsyncSocket, table_id: int) -> None:
        for _ in range(client.retry.attempts):
            table = await self._aread(client, table_id)
            decision = self._decide(table)
            if decision is None:
                return
            action, key = decision
            submit = client.submit_action if isinstance(client, AsyncSocket) else client.tables.act
            try:
                await submit(table_id, action, version=table["version"], idempotency_key=key)
            except (StaleVersion, Conflict) as exc:
                log.info("table %s v%s: %s; deciding again", table_id, table["version"], exc.code)
                continue
            except RulesError as exc:
                log.warning("table %s v%s: %s refused: %s", table_id, table["version"], action, exc)
                return
            log.info("table %s v%s: %s", table_id, table["version"], action)
            return


__all__ = ["Bot", "HeartsError"]
