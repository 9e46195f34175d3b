/**
 * A whole game against three server bots with the TypeScript client (run by tests/e2e/test_sdk_typescript.py):
 *
 *     node dist/examples/play.js http://localhost:8000
 *     node dist/examples/play.js http://localhost:8000 --socket   # the game over one WebSocket
 *
 * A guest creates a table with three random bots and no clocks, and a `Bot` plays seat 0 to the end:
 * pass the three highest cards, play the lowest legal one. Prints one JSON line: who the token is,
 * the status of a stream opened with a ticket, the game's export and transcript, the table, its
 * status and totals, the events seen by type, and how often the stream was resumed. With `--socket`
 * the bot plays over one GraphQL WebSocket (graphql-ws: the `tableEvents` subscription, the `table`
 * query, the `joinTable` and `submitAction` mutations), and the line also holds the ids of the events
 * it received, to compare with the SSE stream's.
 */

import { Bot, HeartsClient, type Game, type LegalActions, type StreamEvent, type Table } from "../src/index.js";

const RANKS = "23456789TJQKA";
const rank = (card: string): number => RANKS.indexOf(card.slice(0, -1).replace("10", "T"));

class Lowest extends Bot {
  seen: Record<string, number> = {};
  ids: [string, string][] = []; // [type, id] of each event, in order

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
    this.ids.push([event.type, (event as { id?: string }).id ?? ""]);
  }
}

const base = process.argv[2] ?? "http://localhost:8000";
const overSocket = process.argv.includes("--socket");
const client = await HeartsClient.asGuest(base, "typescript", { retry: { backoffMs: 100 } });
const created = await client.tables.create({
  options: { target_score: 50 },
  bots: { "1": "random", "2": "random", "3": "random" },
  clocks: { pass: null, play: null, moon: null },
});
const bot = new Lowest();
let table: Table;
let reconnects: number;
if (overSocket) {
  const ws = await client.socket(); // graphql-ws; on Node 20 with the `ws` package as its WebSocket
  const subscription = ws.subscribeTableEvents(created.id);
  table = await bot.run(ws, created.id, 0, subscription);
  reconnects = subscription.reconnects;
  await ws.close();
} else {
  const stream = client.streams.table(created.id);
  table = await bot.run(client, created.id, 0, stream);
  reconnects = stream.reconnects;
}
// Who am I, and a ticket that opens the table's stream without the Authorization header.
const me = await client.me.get();
const ticket = await client.streams.tableTicket(table.id);
const anonymous = await fetch(ticket.url);
await anonymous.body?.cancel();
// The finished game's document and transcript.
const exported = await client.tables.export(table.id);
const transcript = await client.tables.transcript(table.id);
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
    reconnects,
    ...(overSocket ? { socket: true, events: bot.ids, token: client.token } : {}),
  }),
);
