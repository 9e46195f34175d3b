/**
 * A whole game against three server bots with the TypeScript client (run by tests/test_sdk_typescript.py):
 *
 *     node dist/examples/play.js http://localhost:8000
 *
 * A guest creates a table with three random bots and no clocks, and a `Bot` plays seat 0 to the end:
 * pass the three highest cards, play the lowest legal one. Prints one JSON line: who the token is,
 * the status of a stream opened with a ticket, the game's export and transcript, the table, its
 * status and totals, the events seen by type, and how often the stream was resumed.
 */

import { Bot, HeartsClient, type Game, type LegalActions, type StreamEvent } from "../src/index.js";

const RANKS = "23456789TJQKA";
const rank = (card: string): number => RANKS.indexOf(card.slice(0, -1).replace("10", "T"));

class Lowest extends Bot {
  seen: Record<string, number> = {};

  choosePass(_view: Game, legal: LegalActions): string[] {
    const cards = [...(legal.from ?? [])].sort((a, b) => rank(a) - rank(b));
    return cards.slice(cards.length - (legal.count ?? 3));
  }

  choosePlay(_view: Game, legal: LegalActions): string {
    const cards = [...(legal.cards ?? [])].sort((a, b) => rank(a) - rank(b));
    const lowest = cards[0];
    if (lowest === undefined) throw new Error("no legal card");
    return lowest;
  }

  override onEvent(event: StreamEvent): void {
    this.seen[event.type] = (this.seen[event.type] ?? 0) + 1;
  }
}

const base = process.argv[2] ?? "http://localhost:8000";
const client = await HeartsClient.asGuest(base, "typescript", { retry: { backoffMs: 100 } });
const created = await client.createTable({
  options: { target_score: 50 },
  bots: { "1": "random", "2": "random", "3": "random" },
  clocks: { pass: null, play: null, moon: null },
});
const bot = new Lowest();
const stream = client.stream(created.id);
const table = await bot.run(client, created.id, 0, stream);
// Who am I, and a ticket that opens the table's stream without the Authorization header.
const me = await client.me();
const ticket = await client.streamTicket(table.id);
const anonymous = await fetch(ticket.url);
await anonymous.body?.cancel();
// The finished game's document and transcript.
const exported = await client.exportGame(table.id);
const transcript = await client.transcript(table.id);
console.log(
  JSON.stringify({
    me: me.kind,
    ticket: anonymous.status,
    export: { format: exported.format, hands: exported.hands.length, totals: exported.totals },
    transcript: transcript.length,
    table: table.id,
    status: table.status,
    totals: table.game?.scores ?? null,
    seen: bot.seen,
    reconnects: stream.reconnects,
  }),
);
