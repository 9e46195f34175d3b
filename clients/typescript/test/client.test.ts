/**
 * The client's retry and stream rules on a scripted fetch (run with `node --test dist/test/`):
 * keys reused on retries, Retry-After honoured, stale_version raised for actions and retried for
 * lobby writes, attempts bounded, streams resumed with Last-Event-ID.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  HeartsClient,
  HeartsError,
  QuotaExceeded,
  RetryLater,
  StaleVersion,
  type Action,
  type BotEndpointWithSecret,
  type BotTurn,
  type components,
  type LeaderboardPage,
  type MyTurns,
  type RatingHistoryPage,
  type RatingsChanged,
  type StreamEvent,
  type Turn,
} from "../src/index.js";

// Compile-time: each action the client sends is a body the document's submitAction accepts.
const actions: Action[] = [
  { type: "pass", cards: ["QS", "AH", "KH"] },
  { type: "play", card: "2C" },
  { type: "moon", choice: "add" },
];
const bodies: components["schemas"]["ActionRequest"][] = actions;

type Answer = Response | Error;

/** A fetch answering each call with the next scripted answer, recording what was sent. */
function scripted(...answers: Answer[]): { sent: Request[]; fetch: typeof fetch } {
  const sent: Request[] = [];
  const fake = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    sent.push(new Request(input, init));
    const answer = answers.shift();
    if (answer === undefined) throw new Error("no answer left");
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { sent, fetch: fake as typeof fetch };
}

const TABLE = { id: 7, status: "playing", version: 12 };
const json = (status: number, body: unknown, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const client = (fetcher: typeof fetch): HeartsClient =>
  new HeartsClient("http://hearts.test", "hk_player_x", { fetch: fetcher, retry: { attempts: 3, backoffMs: 0 } });

test("actions are the document's action bodies", () => {
  assert.equal(bodies.length, 3);
});

test("a lost answer and a 429 are retried with the same key", async () => {
  const { sent, fetch } = scripted(
    new TypeError("fetch failed"),
    json(429, { code: "rate_limited", detail: "x" }, { "Retry-After": "0" }),
    json(200, TABLE),
  );
  assert.deepEqual(await client(fetch).tables.play(7, "QS", 12), TABLE);
  assert.equal(sent.length, 3);
  assert.equal(new Set(sent.map((r) => r.headers.get("Idempotency-Key"))).size, 1);
  assert.deepEqual(sent.map((r) => r.headers.get("If-Match")), ["12", "12", "12"]);
  assert.equal(sent[0]?.url, "http://hearts.test/api/v1/tables/7/actions");
  assert.deepEqual(await sent[0]?.json(), { type: "play", card: "QS" });
});

test("attempts are bounded and a long Retry-After is not waited for", async () => {
  const unavailable = (): Response => json(503, { code: "service_unavailable", detail: "db" });
  let { sent, fetch } = scripted(unavailable(), unavailable(), unavailable());
  await assert.rejects(client(fetch).tables.get(7), (e: unknown) => e instanceof RetryLater && e.code === "service_unavailable");
  assert.equal(sent.length, 3);
  ({ sent, fetch } = scripted(json(429, { code: "rate_limited", detail: "x" }, { "Retry-After": "3600" })));
  await assert.rejects(client(fetch).tables.get(7), (e: unknown) => e instanceof RetryLater && e.retryAfter === 3600);
  assert.equal(sent.length, 1);
});

test("a full quota is raised at once, not retried as a rate limit is", async () => {
  const { sent, fetch } = scripted(json(429, { code: "quota_exceeded", detail: "full", quota: "open_tables", limit: 3 }));
  await assert.rejects(
    client(fetch).tables.get(7),
    (e: unknown) => e instanceof QuotaExceeded && !(e instanceof RetryLater) && e.body["quota"] === "open_tables",
  );
  assert.equal(sent.length, 1);
});

test("stale_version: a join is retried at the current version, an action is raised", async () => {
  const stale = (): Response => json(409, { code: "stale_version", detail: "moved on", version: 14 });
  let { sent, fetch } = scripted(stale(), json(200, TABLE));
  await client(fetch).tables.join(7, 2, 12);
  assert.deepEqual(sent.map((r) => r.headers.get("If-Match")), ["12", "14"]);
  assert.equal(sent[0]?.headers.get("Idempotency-Key"), sent[1]?.headers.get("Idempotency-Key"));
  ({ sent, fetch } = scripted(stale()));
  await assert.rejects(client(fetch).tables.play(7, "QS", 12), (e: unknown) => e instanceof StaleVersion && e.version === 14);
  assert.equal(sent.length, 1);
  ({ sent, fetch } = scripted(json(422, { code: "must_follow_suit", detail: "follow", suit: "H" })));
  await assert.rejects(
    client(fetch).tables.play(7, "QS"),
    (e: unknown) => e instanceof HeartsError && e.code === "must_follow_suit" && e.body["suit"] === "H",
  );
});

/** An SSE answer whose body ends after `frames` (a dropped connection when it ends early). */
function sse(...frames: string[]): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const frame of frames) controller.enqueue(new TextEncoder().encode(frame));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

const frame = (id: string, data: Record<string, unknown>): string =>
  `id: ${id}\nevent: ${String(data["type"])}\ndata: ${JSON.stringify({ id, ...data })}\n\n`;

test("a stream resumes after a drop with Last-Event-ID and ends after table_finished", async () => {
  const { sent, fetch } = scripted(
    sse("retry: 2000\n\n", frame("5", { type: "state", table: 7, state: TABLE }), ": keep-alive\n\n",
      frame("6:0", { type: "card_played", seq: 6, hand: 1, seat: 1, card: "2C" }), "id: 7:0\ndata: {\"ty"),
    new TypeError("terminated"),
    sse(frame("7:0", { type: "card_played", seq: 7, hand: 1, seat: 2, card: "3C" }),
      frame("8:0", { type: "table_finished", seq: 8, hand: 1, status: "finished", winners: [0], totals: [0, 1, 2, 3] })),
  );
  const stream = client(fetch).streams.table(7);
  const seen: StreamEvent[] = [];
  for await (const event of stream) seen.push(event);
  assert.deepEqual(seen.map((e) => e.type), ["state", "card_played", "card_played", "table_finished"]);
  assert.deepEqual(sent.map((r) => r.headers.get("Last-Event-ID")), [null, "6:0", "6:0"]);
  assert.equal(stream.reconnects, 2);
  assert.equal(stream.lastEventId, "8:0");
});

test("a conditional read answers undefined while the table is unchanged", async () => {
  const { sent, fetch } = scripted(new Response(null, { status: 304 }), json(200, TABLE));
  const hearts = client(fetch);
  assert.equal(await hearts.tables.getIfChanged(7, 12), undefined);
  assert.deepEqual(await hearts.tables.getIfChanged(7, 12), TABLE);
  assert.deepEqual(sent.map((r) => r.headers.get("If-None-Match")), ['W/"12"', 'W/"12"']);
});

test("ratings: rated tables, the leaderboard and a player's history in pages, typed by the document", async () => {
  const page: LeaderboardPage = {
    next: "http://hearts.test/api/v1/leaderboard?cursor=abc&family=classic-4",
    previous: null,
    results: [
      { player: 3, name: "Ada", family: "classic-4", mu: 27.1, sigma: 7.9, score: 3.4, games: 2, updated_at: "2026-05-01T12:00:00Z" },
    ],
  };
  const history: RatingHistoryPage = { next: null, previous: null, results: [] };
  const changed: RatingsChanged = {
    type: "ratings_changed",
    seq: 400,
    hand: 6,
    family: "classic-4",
    changes: [{ seat: 0, place: 1, mu: 27.1, sigma: 7.9 }],
  };
  const { sent, fetch } = scripted(json(201, { ...TABLE, rated: true }), json(200, page), json(200, history));
  const hearts = client(fetch);
  assert.equal((await hearts.tables.create({ rated: true })).rated, true);
  assert.deepEqual(await sent[0]?.json(), { options: {}, bots: {}, clocks: {}, rated: true });
  const board = await hearts.ratings.leaderboard("classic-4", "abc");
  assert.equal(board.results[0]?.score, 3.4);
  assert.equal(sent[1]?.url, "http://hearts.test/api/v1/leaderboard?family=classic-4&cursor=abc");
  await hearts.ratings.history(3, { family: "classic-4" });
  assert.equal(sent[2]?.url, "http://hearts.test/api/v1/players/3/rating-history?family=classic-4");
  assert.equal(changed.changes[0]?.place, 1);
});

test("createTable sends the bots' thinking time and pace only when given", async () => {
  const { sent, fetch } = scripted(json(201, TABLE), json(201, TABLE));
  const hearts = client(fetch);
  await hearts.tables.create({ bots: { "1": "expert" }, bot_think_ms: 500, bot_pace_ms: 0 });
  await hearts.tables.create({ bots: { "1": "basic" } });
  const [timed, plain] = [await sent[0]?.json(), await sent[1]?.json()];
  assert.deepEqual(timed, { options: {}, bots: { "1": "expert" }, clocks: {}, bot_think_ms: 500, bot_pace_ms: 0 });
  assert.deepEqual(plain, { options: {}, bots: { "1": "basic" }, clocks: {} });
});

test("a tournament is created with its key kept on a retry, and its standings are typed", async () => {
  const created = { id: 3, status: "running", tables_total: 8 };
  const standings = {
    tournament: 3,
    status: "finished",
    deal_sets_complete: 2,
    entrants: [{ entrant: 0, rank: 1, relative_points: 1.5, ci95_low: 0.5, ci95_high: 2.5 }],
  };
  const { sent, fetch } = scripted(new TypeError("fetch failed"), json(201, created), json(200, standings));
  const hearts = client(fetch);
  const made = await hearts.tournaments.create({ entrants: [{ bot: "basic" }, { bot: "random" }], deal_sets: 2, seed: "7" });
  assert.deepEqual(made, created);
  assert.equal(sent.length, 2);
  const [first, retried] = sent;
  assert.ok(first && retried);
  assert.equal(first.headers.get("Idempotency-Key"), retried.headers.get("Idempotency-Key"));
  assert.deepEqual(await retried.json(), { entrants: [{ bot: "basic" }, { bot: "random" }], deal_sets: 2, seed: "7" });
  const table = await hearts.tournaments.standings(3);
  const best: number | undefined = table.entrants[0]?.relative_points;
  assert.equal(best, 1.5);
  assert.equal(new URL(sent[2]?.url ?? "").pathname, "/api/v1/tournaments/3/standings");
});

test("bots the app brings: registered, changed and rotated with typed bodies; ext: levels seat them", async () => {
  const bot: BotEndpointWithSecret = {
    id: 3,
    name: "mine",
    level: "ext:mine",
    url: "https://bots.example.com/turn",
    timeout_ms: 800,
    enabled: true,
    calls: 0,
    answered: 0,
    fallbacks: { timeout: 0, failed: 0, bad_answer: 0, illegal: 0, disabled: 0 },
    last_error: "",
    last_called_at: null,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    secret: "whsec_abc",
  };
  const { sent, fetch } = scripted(
    json(201, bot),
    json(200, { ...bot, timeout_ms: 1500, secret: undefined }),
    json(200, { results: [bot] }),
    json(200, TABLE),
    new Response(null, { status: 204 }),
  );
  const c = client(fetch);
  assert.equal((await c.bots.register({ name: "mine", url: bot.url, timeout_ms: 800 })).secret, "whsec_abc");
  assert.equal((await c.bots.update(3, { timeout_ms: 1500 })).timeout_ms, 1500);
  assert.deepEqual((await c.bots.list()).map((b) => b.level), ["ext:mine"]);
  await c.tables.addBot(7, "ext:mine", 1);
  await c.bots.delete(3);
  assert.deepEqual(
    sent.map((r) => `${r.method} ${new URL(r.url).pathname}`),
    ["POST /api/v1/bots", "PATCH /api/v1/bots/3", "GET /api/v1/bots", "POST /api/v1/tables/7/bots", "DELETE /api/v1/bots/3"],
  );
  assert.deepEqual(await sent[3]!.json(), { level: "ext:mine", position: 1 });
  // Compile-time: a turn's view and legal actions are the document's.
  const turn: Pick<BotTurn, "type" | "seat"> = { type: "bot.turn", seat: 0 };
  assert.equal(turn.type, "bot.turn");
});

test("listAll follows the cursor pages, keeping the filters", async () => {
  const row = { id: 1 };
  const { sent, fetch } = scripted(
    json(200, { next: "http://hearts.test/api/v1/tables?cursor=c2&status=open", previous: null, results: [row, row] }),
    json(200, { next: null, previous: "x", results: [row] }),
  );
  const seen = [];
  for await (const table of client(fetch).tables.listAll({ status: "open" })) seen.push(table);
  assert.equal(seen.length, 3);
  assert.deepEqual(
    sent.map((r) => new URL(r.url).search),
    ["?status=open", "?status=open&cursor=c2"],
  );
});

test("webhooks and hands: each method sends its operation", async () => {
  const hook = { id: 5, url: "https://x/hook", event_types: ["*"], description: "", active: true, secret: "whsec_a" };
  const delivery = { id: "d1", status: "pending" };
  const { sent, fetch } = scripted(
    json(201, hook),
    json(200, { results: [hook] }),
    json(200, hook),
    json(200, { next: null, previous: null, results: [delivery] }),
    json(202, delivery),
    new Response(null, { status: 204 }),
    json(200, { hands: [{ number: 1 }] }),
    json(200, { number: 1, moves: [] }),
  );
  const hearts = client(fetch);
  assert.equal((await hearts.webhooks.create({ url: hook.url })).secret, "whsec_a");
  assert.equal((await hearts.webhooks.list())[0]?.id, 5);
  await hearts.webhooks.update(5, { active: false });
  const deliveries = [];
  for await (const d of hearts.webhooks.deliveriesAll(5, { status: "pending" })) deliveries.push(d.id);
  assert.deepEqual(deliveries, ["d1"]);
  assert.equal((await hearts.webhooks.redeliver(5, "d1")).status, "pending");
  await hearts.webhooks.delete(5);
  assert.equal((await hearts.hands.list(7))[0]?.number, 1);
  assert.equal((await hearts.hands.get(7, 1)).number, 1);
  assert.deepEqual(
    sent.map((r) => `${r.method} ${new URL(r.url).pathname}${new URL(r.url).search}`),
    [
      "POST /api/v1/webhooks",
      "GET /api/v1/webhooks",
      "PATCH /api/v1/webhooks/5",
      "GET /api/v1/webhooks/5/deliveries?status=pending",
      "POST /api/v1/webhooks/5/deliveries/d1/redeliver",
      "DELETE /api/v1/webhooks/5",
      "GET /api/v1/tables/7/hands",
      "GET /api/v1/tables/7/hands/1",
    ],
  );
  assert.ok(sent.filter((r) => r.method !== "GET").every((r) => r.headers.get("Idempotency-Key")));
});

test("me.turns reads the player's turns, soonest deadline first, typed by the document", async () => {
  const turn: Turn = {
    table: 7,
    status: "passing",
    version: 8,
    seat: 0,
    action: "pass",
    deadline: "2026-12-06T09:00:00Z",
    clock: 86400,
  };
  const { sent, fetch } = scripted(json(200, { turns: [turn], more: false }));
  const answer: MyTurns = await client(fetch).me.turns();
  assert.deepEqual(answer.turns.map((t) => [t.table, t.action, t.clock]), [[7, "pass", 86400]]);
  assert.equal(answer.more, false);
  assert.deepEqual(
    sent.map((r) => `${r.method} ${new URL(r.url).pathname}`),
    ["GET /api/v1/me/turns"],
  );
  assert.equal(sent[0]?.headers.get("Idempotency-Key"), null);
});

test("a hand's review sends its seat and level only when given", async () => {
  const review = { table_id: 7, hand: 1, seat: 2, level: "basic", pass: null, tricks: [], total_points_lost: 0 };
  const { sent, fetch } = scripted(json(200, review), json(200, review));
  const hearts = client(fetch);
  assert.equal((await hearts.tables.review(7, 1, { seat: 2, level: "basic" })).seat, 2);
  assert.equal((await hearts.tables.review(7, 1)).total_points_lost, 0);
  assert.deepEqual(
    sent.map((r) => `${r.method} ${new URL(r.url).pathname}${new URL(r.url).search}`),
    ["GET /api/v1/tables/7/hands/1/review?seat=2&level=basic", "GET /api/v1/tables/7/hands/1/review"],
  );
});
