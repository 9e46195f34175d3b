/**
 * GraphQL over one WebSocket (docs/clients.md, "Subscriptions over one socket"), on the `graphql-ws`
 * npm client: `tableEvents` and `myEvents` as async iterators of the streams' own events, resumed
 * after a dropped socket with `after` = the id of the last message received (graphql-ws reconnects
 * and subscribes again with the same payload, whose `after` this module keeps current), and the
 * table's queries and mutations on the same socket.
 *
 * Every message is selected whole and turned back into the REST shape (snake_case keys, `type` as
 * the stream's), so code written for `streamTableEvents` works unchanged; a table is the REST body.
 */

import { createClient, type Client, type SubscribePayload } from "graphql-ws";
import { HeartsError, RetryLater, StaleVersion, type Action, type Retry, type StreamEvent, type Table } from "./index.js";

export const LEGAL = "legalActions { type count from cards choices }";
export const GAME =
  "seat handNumber phase dealer passDirection dealCommitment toAct turn handSizes heartsBroken " +
  "trick { seat card } leader tricks { leader cards { seat card } winner points } pointsTaken " +
  "scores scoresheet { hand points totals moon { seat choice } } winners passed " +
  "widow { size takenBy } moon { seat choices } gameSeed hand myPass { to cards } " +
  `received { from cards } ${LEGAL}`;
export const TABLE =
  "id status version options { players targetScore variant omnibusCard tieRule firstHand hands } " +
  "clocks { pass play moon awayAfter } botThinkMs botPaceMs deadline " +
  "seats { position player name bot away timeouts } yourSeat " +
  `game { ${GAME} } rematchOf rematch { asked table } visibility invited ` +
  "spectatorDelay { seconds tricks } delayed spectators rated";
const RECORD =
  "hand seed dealCommitment dealer passDirection dealt widow passes { to cards } " +
  "tricks { leader cards winner } takenPoints moon { seat choice } points totals";
/** Each logged event type's fields beyond `id table seq hand type`; `!field`: aliased `<Type>_<field>`
 * (its type differs between event types). The same list as the Python SDK's (hearts_client._socket). */
const EVENT_FIELDS: Record<string, string> = {
  game_started: "",
  seat_taken: "seat player name",
  seat_left: "seat player",
  bot_added: "seat level",
  bot_fallback: "seat reason",
  hand_started: "dealer passDirection dealCommitment",
  cards_dealt: "seat cards",
  pass_submitted: "seat",
  cards_passed: "seat to cards",
  passes_complete: "",
  cards_received: "seat from cards",
  card_played: "seat card",
  hearts_broken: "seat card",
  trick_won: "seat trick cards !points",
  trick_carried: "leader cards",
  moon_shot: "seat choices",
  moon_chosen: "seat choice",
  hand_scored: "!points !totals moon { seat choice }",
  hand_revealed: `record { ${RECORD} }`,
  game_over: "!winners !totals seed",
  table_abandoned: "",
  table_finished: "!status !winners !totals",
  ratings_changed: "family changes { seat place mu sigma }",
  turn_timed_out: "seat deadline",
  seat_away: "seat",
  seat_back: "seat",
  match_found: "bots",
  quick_play_expired: "",
  rematch_proposed: "seat",
  rematch_accepted: "seat",
  rematch_started: "newTable",
  tournament_table: "tournament dealSet rotation",
  tournament_progress: "tournament tablesFinished tablesTotal !status",
  tournament_next_table: "tournament nextTable",
};
const OWN_TYPES: Record<string, string> = {
  TableStateEvent: "state",
  MyTablesEvent: "tables",
  YourTurnEvent: "your_turn",
};

const typeName = (kind: string): string =>
  kind
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("") + "Event";

function selection(): string {
  const parts = ["id", "__typename"];
  for (const [kind, fields] of Object.entries(EVENT_FIELDS)) {
    const name = typeName(kind);
    const extra = fields
      .split(" ")
      .filter((f) => f)
      .map((f) => (f.startsWith("!") ? `${name}_${f.slice(1)}: ${f.slice(1)}` : f))
      .join(" ");
    parts.push(`... on ${name} { table seq hand type ${extra} }`);
  }
  parts.push(`... on TableStateEvent { table state { ${TABLE} } }`);
  parts.push(`... on MyTablesEvent { tables { ${TABLE} } }`);
  parts.push(`... on YourTurnEvent { table version hand phase seat ${LEGAL} deadline }`);
  return parts.join(" ");
}

export const EVENT = selection();
export const TABLE_EVENTS = `subscription TableEvents($tableId: Int!, $after: String) { tableEvents(tableId: $tableId, after: $after) { ${EVENT} } }`;
export const MY_EVENTS = `subscription MyEvents($after: String) { myEvents(after: $after) { ${EVENT} } }`;
export const GET_TABLE = `query GetTable($id: Int!) { table(id: $id) { ${TABLE} } }`;
const PAYLOAD = `{ table { ${TABLE} } errors { code message field } replayed }`;
const ARGS = "$tableId: Int!, $expectedVersion: Int, $idempotencyKey: String";
const PASS_ON = "tableId: $tableId, expectedVersion: $expectedVersion, idempotencyKey: $idempotencyKey";
export const SUBMIT_ACTION =
  `mutation SubmitAction(${ARGS}, $type: String!, $card: String, $cards: [String!], $choice: String) ` +
  `{ submitAction(${PASS_ON}, type: $type, card: $card, cards: $cards, choice: $choice) ${PAYLOAD} }`;
export const JOIN_TABLE =
  `mutation JoinTable(${ARGS}, $position: Int) { joinTable(${PASS_ON}, position: $position) ${PAYLOAD} }`;

const QUIET: Record<string, unknown> = { first_hand: 1, hands: 0 }; // options REST leaves out at their defaults

/** A GraphQL answer in the REST shape: snake_case keys, no `__typename`, no type aliases, and
 * `legal_actions` without its nulls (REST leaves out what does not apply). */
export function snake(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snake);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(value)) {
    if (key === "__typename") continue;
    const name = key.replace(/^[A-Z]\w*Event_/, "").replace(/(?<!^)(?=[A-Z])/g, "_").toLowerCase();
    let item = snake(raw);
    if (name === "legal_actions" && typeof item === "object" && item !== null) {
      item = Object.fromEntries(Object.entries(item).filter(([, v]) => v !== null));
    } else if (name === "options" && typeof item === "object" && item !== null) {
      item = Object.fromEntries(Object.entries(item).filter(([k, v]) => !(k in QUIET) || QUIET[k] !== v));
    }
    out[name] = item;
  }
  return out;
}

/** One subscription message as the stream's event (`state`, `tables`, `your_turn` for the
 * subscriptions' own messages; a `your_turn`'s `seq` is its version, as on the stream). */
export function eventOf(message: Record<string, unknown>): StreamEvent {
  const kind = OWN_TYPES[String(message["__typename"])];
  const event = snake(message) as Record<string, unknown>;
  if (kind !== undefined) event["type"] = kind;
  if (kind === "your_turn") event["seq"] = event["version"];
  return event as unknown as StreamEvent;
}

interface GraphQLErrorLike {
  message?: string;
  code?: string;
  field?: string | null;
  extensions?: Record<string, unknown>;
}

/** The first of GraphQL `errors` (or a payload's typed errors) as the REST client's error. */
export function graphqlError(errors: unknown): HeartsError {
  const first = (Array.isArray(errors) ? errors[0] : errors) as GraphQLErrorLike | undefined;
  if (typeof first !== "object" || first === null) {
    const detail = String(first);
    return new HeartsError("invalid_request", detail, null, { code: "invalid_request", detail });
  }
  const extensions = first.extensions ?? {};
  const code = String(extensions["code"] ?? first.code ?? "invalid_query");
  return codedError(code, String(first.message ?? ""), { ...extensions, ...(first.field ? { field: first.field } : {}) });
}

function codedError(code: string, detail: string, extra: Record<string, unknown> = {}): HeartsError {
  const body = { ...extra, code, detail } as HeartsError["body"];
  if (code === "stale_version") return new StaleVersion(body.code, detail, 409, body);
  if (code === "rate_limited" || code === "service_unavailable") {
    const error = new RetryLater(body.code, detail, code === "rate_limited" ? 429 : 503, body);
    error.retryAfter = typeof extra["retry_after"] === "number" ? extra["retry_after"] : null;
    return error;
  }
  return new HeartsError(body.code, detail, null, body);
}

/** A failed subscription or operation (GraphQL errors, a close, a lost socket) as a HeartsError. */
function failure(error: unknown): HeartsError {
  if (error instanceof HeartsError) return error;
  if (Array.isArray(error)) return graphqlError(error);
  const close = error as { code?: unknown; reason?: unknown };
  if (typeof close?.code === "number") {
    const reason = typeof close.reason === "string" ? close.reason : "";
    const match = /^([a-z_]+): (.*)$/s.exec(reason);
    if (match) return codedError(match[1]!, match[2]!);
    const detail = `the socket closed (${close.code}) ${reason}`.trim();
    return new HeartsError("transport_error", detail, null, { code: "transport_error", detail });
  }
  const detail = String(error);
  return new HeartsError("transport_error", detail, null, { code: "transport_error", detail });
}

export interface SocketOptions {
  /** A stream ticket instead of the client's token: then only that ticket's stream. */
  ticket?: string;
  /** The WebSocket class: by default the runtime's own (Node 22, browsers, Deno, Bun) or, on
   * Node 20 (no global WebSocket), the `ws` package's. */
  webSocketImpl?: unknown;
}

interface Result {
  data?: Record<string, unknown> | null;
  errors?: unknown[];
}

/**
 * One WebSocket to `/graphql/` (graphql-transport-ws) for a token or a stream ticket, open until
 * `close()`: `subscribeTableEvents`, `subscribeMyEvents`, `execute`, and the REST client's table
 * calls (`getTable`, `joinTable`, `submitAction`, `pass`, `play`, `chooseMoon`) as queries and
 * mutations on it. Dropped, it connects again (graphql-ws's retries, `retry.streamAttempts` in a
 * row, waits as the REST client's) and every subscription goes on after its last message.
 */
export class HeartsSocket {
  readonly client: Client;
  /** Connections made so far (the first, then one per resume). */
  connections = 0;
  private fatal: HeartsError | null = null;

  constructor(
    readonly url: string,
    readonly retry: Retry,
    connectionParams: Record<string, unknown>,
    webSocketImpl: unknown,
    delay: (failures: number) => number,
  ) {
    this.client = createClient({
      url,
      connectionParams,
      webSocketImpl,
      lazy: false, // one socket, open from the start, through every operation
      keepAlive: 15000, // a ping every 15 s: the server hears from a quiet client
      retryAttempts: retry.streamAttempts,
      retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, delay(retries + 1))),
      onNonLazyError: (error) => {
        this.fatal = failure(error);
      },
      on: {
        connected: () => {
          this.connections++;
        },
      },
    });
  }

  /** Connections made again after a drop. */
  get reconnects(): number {
    return Math.max(0, this.connections - 1);
  }

  /** Wait for the first connection (a refused token throws here). */
  async ready(timeoutMs = 15000): Promise<this> {
    const started = Date.now();
    while (this.connections === 0) {
      if (this.fatal) throw this.fatal;
      if (Date.now() - started > timeoutMs) throw failure("the socket did not connect");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return this;
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }

  /** A table's events (`tableEvents`): the `state` first without `after`; ends after `table_finished`. */
  subscribeTableEvents(tableId: number, after?: string): SocketSubscription {
    return new SocketSubscription(this, TABLE_EVENTS, { tableId }, after ?? null, true);
  }

  /** Player token: your events at all your tables (`myEvents`), `tables` first without `after`. */
  subscribeMyEvents(after?: string): SocketSubscription {
    return new SocketSubscription(this, MY_EVENTS, {}, after ?? null, false);
  }

  /** Any query or mutation: its `{ data, errors }` (a refusal before it ran throws). After a lost
   * socket graphql-ws sends it again: give a mutation an `idempotencyKey` so it cannot act twice. */
  execute(query: string, variables: Record<string, unknown> = {}): Promise<Result> {
    if (this.fatal) return Promise.reject(this.fatal);
    return new Promise((resolve, reject) => {
      let answer: Result | null = null;
      this.client.subscribe(
        { query, variables },
        {
          next: (result) => {
            answer = result as Result;
          },
          error: (error) => reject(failure(error)),
          complete: () =>
            answer === null ? reject(failure("the operation completed with no answer")) : resolve(answer),
        },
      );
    });
  }

  private async mutate(field: string, query: string, variables: Record<string, unknown>): Promise<Table> {
    const answer = await this.execute(query, variables);
    if (answer.errors?.length) throw graphqlError(answer.errors);
    const payload = answer.data?.[field] as { table?: unknown; errors?: unknown[] } | null | undefined;
    if (!payload) throw codedError("internal_error", `no ${field} in the answer`);
    if (payload.errors?.length) throw graphqlError(payload.errors);
    return snake(payload.table) as Table;
  }

  /** The table as `getTable` answers it (`not_found` when you may not see it). */
  async getTable(tableId: number): Promise<Table> {
    const answer = await this.execute(GET_TABLE, { id: tableId });
    if (answer.errors?.length) throw graphqlError(answer.errors);
    const table = answer.data?.["table"];
    if (!table) throw codedError("not_found", `no table ${tableId} you may see`);
    return snake(table) as Table;
  }

  joinTable(tableId: number, position?: number, version?: number, key?: string): Promise<Table> {
    return this.mutate("joinTable", JOIN_TABLE, {
      tableId,
      position: position ?? null,
      expectedVersion: version ?? null,
      idempotencyKey: key ?? `hc-${crypto.randomUUID()}`,
    });
  }

  /** Your seat's action as of `version`; `stale_version` throws StaleVersion (its `version` is null
   * over the socket: read the table). */
  submitAction(tableId: number, action: Action, version?: number, key?: string): Promise<Table> {
    return this.mutate("submitAction", SUBMIT_ACTION, {
      tableId,
      expectedVersion: version ?? null,
      idempotencyKey: key ?? `hc-${crypto.randomUUID()}`,
      ...action,
    });
  }

  pass(tableId: number, cards: string[], version?: number, key?: string): Promise<Table> {
    return this.submitAction(tableId, { type: "pass", cards }, version, key);
  }

  play(tableId: number, card: string, version?: number, key?: string): Promise<Table> {
    return this.submitAction(tableId, { type: "play", card }, version, key);
  }

  chooseMoon(tableId: number, choice: "subtract" | "add", version?: number, key?: string): Promise<Table> {
    return this.submitAction(tableId, { type: "moon", choice }, version, key);
  }
}

type Item = { event: StreamEvent } | { error: HeartsError } | { done: true };

/** The events of one subscription; iterate with `for await`. `lastEventId` is the id of the last
 * message received (a new subscription after a drop starts after it). */
export class SocketSubscription implements AsyncIterable<StreamEvent> {
  lastEventId: string | null;
  private readonly started: number;
  private dispose: (() => void) | null = null;
  private finished = false;

  constructor(
    readonly socket: HeartsSocket,
    private readonly query: string,
    private readonly variables: Record<string, unknown>,
    after: string | null,
    private readonly tableStream: boolean,
  ) {
    this.lastEventId = after;
    this.started = socket.connections;
  }

  /** Connections made again while it ran. */
  get reconnects(): number {
    return Math.max(0, this.socket.connections - Math.max(this.started, 1));
  }

  /** Stop: the iteration ends and the server is told. */
  close(): void {
    this.finished = true;
    this.dispose?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    const variables: Record<string, unknown> = { ...this.variables, after: this.lastEventId };
    const payload: SubscribePayload = { query: this.query, variables };
    const queue: Item[] = [];
    let wake: (() => void) | null = null;
    const push = (item: Item): void => {
      queue.push(item);
      wake?.();
    };
    this.dispose = this.socket.client.subscribe(payload, {
      next: (result) => {
        if (result.errors?.length) return push({ error: graphqlError(result.errors) });
        const message = Object.values(result.data ?? {})[0] as Record<string, unknown> | undefined;
        if (!message) return;
        // Received: graphql-ws sends this same payload again after a drop, so it resumes here.
        if (typeof message["id"] === "string") variables["after"] = message["id"];
        push({ event: eventOf(message) });
      },
      error: (error) => push({ error: failure(error) }),
      complete: () => push({ done: true }),
    });
    try {
      while (!this.finished) {
        if (queue.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
          continue;
        }
        const item = queue.shift() as Item;
        if ("done" in item) return;
        if ("error" in item) throw item.error;
        const event = item.event;
        this.lastEventId = (event as { id?: string }).id ?? this.lastEventId;
        if (this.tableStream && event.type === "table_finished") this.finished = true;
        if (event.type === "state" && (event.state.status === "finished" || event.state.status === "abandoned")) {
          this.finished = true;
        }
        yield event;
      }
    } finally {
      this.finished = true;
      this.dispose?.();
    }
  }
}

export async function openSocket(
  baseUrl: string,
  token: string | null,
  retry: Retry,
  delay: (failures: number) => number,
  options: SocketOptions,
): Promise<HeartsSocket> {
  const root = baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
  const url = `${root.replace(/^http/, "ws")}/graphql/`;
  let impl = options.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket;
  if (impl === undefined) impl = (await import("ws")).default; // Node 20: no global WebSocket
  const params = options.ticket !== undefined ? { ticket: options.ticket } : { Authorization: `Bearer ${token}` };
  return new HeartsSocket(url, retry, params, impl, delay).ready();
}
