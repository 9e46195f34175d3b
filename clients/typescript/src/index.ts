/**
 * TypeScript client of the Hearts service API (docs/clients.md): the REST calls of a player or an
 * app on fetch, typed by the OpenAPI document (src/schema.d.ts, generated), with the retries of the
 * Python SDK and resumable event streams (SSE over fetch, parsed by eventsource-parser).
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { components, operations } from "./schema.js";
import { openSocket, type HeartsSocket, type SocketOptions, type SocketSubscription } from "./socket.js";

type Schemas = components["schemas"];
/** The whole generated description: every path, operation and schema of the OpenAPI document. */
export type { components, operations, paths } from "./schema.js";
/** GraphQL over one WebSocket: subscriptions, queries and mutations (docs/clients.md). */
export {
  HeartsSocket,
  SocketSubscription,
  eventOf,
  graphqlError,
  snake,
  type SocketOptions,
} from "./socket.js";
export type Table = Schemas["TableOut"];
export type Seat = Schemas["SeatOut"];
export type Game = Schemas["GameOut"];
export type LegalActions = Schemas["LegalOut"];
export type Scoresheet = Schemas["ScoresheetOut"];
export type TablePage = Schemas["TablePageOut"];
export type Me = Schemas["MeOut"];
/** What erasing a player answers, the same on every repeat (DELETE /players/{id}, DELETE /me). */
export type Erased = Schemas["ErasedOut"];
/** An app's own settings: how long its finished tables stay before the archive (`GET /app`). */
export type AppSettings = Schemas["AppSettingsOut"];
/** One of an app's API keys (docs/keys.md): never the key itself, only its `prefix`. */
export type ApiKey = Schemas["ApiKeyOut"];
export type ApiKeyWithSecret = Schemas["ApiKeySecretOut"];
export type RotatedApiKey = Schemas["RotatedKeyOut"];
export type ApiKeyPage = Schemas["ApiKeyPageOut"];
/** A table where your seat is to act (`GET me/turns`), and the whole answer. */
export type Turn = Schemas["TurnOut"];
export type MyTurns = Schemas["TurnsOut"];
/** A correspondence turn's reminder: webhooks only, in a body of type `table.reminder`. */
export type TurnReminder = Schemas["Event_turn_reminder"];
export type GameExport = Schemas["GameExportOut"];
export type StreamTicket = Schemas["StreamTicketOut"];
export type PlayerToken = Schemas["PlayerTokenOut"];
/** Ratings (docs/ratings.md): the system, a rating, a leaderboard page, a player's history. */
export type RatingSystem = Schemas["RatingSystemOut"];
export type Rating = Schemas["RatingOut"];
export type PlayerRatings = Schemas["PlayerRatingsOut"];
export type LeaderboardPage = Schemas["LeaderboardPageOut"];
export type RatingChange = Schemas["RatingChangeOut"];
export type RatingHistoryPage = Schemas["RatingHistoryPageOut"];
export type RatingsChanged = Schemas["Event_ratings_changed"];
export type Tournament = Schemas["TournamentOut"];
export type Standings = Schemas["StandingsOut"];
export type TournamentTableRow = Schemas["TournamentTableOut"];
export type Entrant = { player: number } | { bot: BotLevel };
/** Webhooks (docs/webhooks.md): an endpoint, its secret (shown once), its deliveries. */
export type Webhook = Schemas["WebhookOut"];
export type WebhookWithSecret = Schemas["WebhookSecretOut"];
export type Delivery = Schemas["DeliveryOut"];
export type DeliveryDetail = Schemas["DeliveryDetailOut"];
export type DeliveryPage = Schemas["DeliveryPageOut"];
/** The audit trail (docs/audit.md): one configuration change of the app, and a page of them. */
export type AuditEntry = Schemas["AuditEntryOut"];
export type AuditPage = Schemas["AuditPageOut"];
/** Push notifications (docs/push.md): a device (never its whole token), what registers one, an app's
 * push settings (never a secret), its APNs key, and the VAPID key a browser subscribes with. */
export type Device = Schemas["DeviceOut"];
export type DeviceKind = Device["kind"];
export type DeviceRegistration = Schemas["RegisterDeviceRequest"];
export type PushSettings = Schemas["PushSettingsOut"];
export type ApnsCredential = Schemas["SetApnsCredentialRequest"];
export type FcmServiceAccount = Schemas["SetFcmCredentialRequest"]["service_account"];
export type VapidKey = Schemas["VapidKeyOut"];
/** A table's hands: each deal's commitment, and its seed and record once over. */
export type Hand = Schemas["HandOut"];
export type HandReplay = Schemas["HandReplayOut"];
/** A seat's review of a finished hand: per trick its card, a bot's card and the points lost (docs/bots-and-clocks.md#hand-review). */
export type HandReview = Schemas["HandReviewOut"];
/** The bot level's move for your seat and every legal action's estimated points (docs/hints.md). */
export type Hint = Schemas["HintOut"];
/** An operation of the OpenAPI document, by its operationId. */
export type OperationId = keyof operations;
type Ok<R> = R extends { 200: infer A } ? A : R extends { 201: infer A } ? A : R extends { 202: infer A } ? A : undefined;
type Body<A> = A extends { content: { "application/json": infer B } }
  ? B
  : A extends { content: { "text/plain": infer B } }
    ? B
    : undefined;
/** The decoded success answer of an operation, as the document describes it. */
export type Answer<Op extends OperationId> = Body<Ok<operations[Op]["responses"]>>;
/** The API's error codes (docs/errors.md). */
export type ErrorCode = Schemas["ErrorCode"];
/** An error body: one of the API's codes, or the client's own: `transport_error` (no answer) and
 * `http_<status>` (an answer that is not the API's, such as a proxy's error page). */
export type ErrorBody = Omit<Schemas["ErrorOut"], "code"> & {
  code: ErrorCode | "transport_error" | `http_${number}`;
} & Record<string, unknown>;
/** Any event of a stream; narrow it on `type`. */
export type StreamEvent = Schemas["StreamEvent"];
export type YourTurn = Schemas["Event_your_turn"];
export type BotLevel = "random" | "basic" | "strong" | "expert";
/** A seat's bot: a built-in level, or `ext:<name>` for a bot the app brought (docs/bots-byo.md). */
export type SeatLevel = BotLevel | `ext:${string}`;
/** A bot the app brought, with its counters (calls, answered, fallbacks by reason). */
export type BotEndpoint = Schemas["BotOut"];
/** A registration's (or rotation's) answer: the signing secret, shown this once. */
export type BotEndpointWithSecret = Schemas["BotSecretOut"];
/** The body the service POSTs to a brought bot when its seat must act (docs/bots-byo.md). */
export interface BotTurn {
  id: string;
  type: "bot.turn";
  bot: number;
  name: string;
  table: number;
  version: number;
  seat: number;
  hand: number;
  timeout_ms: number;
  view: Game;
  legal_actions: LegalActions;
}
export type Action =
  | { type: "pass"; cards: string[] }
  | { type: "play"; card: string }
  | { type: "moon"; choice: "subtract" | "add" };

/** The SDK's version: the API's (the OpenAPI document's info.version). */
export const VERSION = "1.0.0";

/** A refusal of the API, or no answer at all (`transport_error`): branch on `code`. */
export class HeartsError extends Error {
  constructor(
    readonly code: ErrorBody["code"],
    readonly detail: string,
    readonly status: number | null,
    readonly body: ErrorBody,
  ) {
    super(`${status ?? "-"} ${code}: ${detail}`);
    this.name = new.target.name;
  }
}

/** 409 `stale_version`: the table moved on; `version` is the current one. */
export class StaleVersion extends HeartsError {
  get version(): number | null {
    return typeof this.body["version"] === "number" ? this.body["version"] : null;
  }
}

/** 429 `quota_exceeded`: one of the app's quotas is full (`body.quota`, `body.limit`); not retried: it frees
 * only when a resource goes away (a table ends, a stream closes...) or the operator raises the quota. */
export class QuotaExceeded extends HeartsError {}

/** 429 or 503: wait `retryAfter` seconds (from `Retry-After`) before trying again. */
export class RetryLater extends HeartsError {
  retryAfter: number | null = null;
}

export interface Retry {
  /** Tries per call, the first included. */
  attempts: number;
  /** First wait (ms) when the server names none, doubling up to `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
  /** A `Retry-After` longer than this (ms) is not waited for: the error is raised. */
  maxWaitMs: number;
  /** Reconnections of a stream in a row without an event. */
  streamAttempts: number;
}

const DEFAULT_RETRY: Retry = {
  attempts: 5,
  backoffMs: 250,
  maxBackoffMs: 5000,
  maxWaitMs: 60000,
  streamAttempts: 10,
};
const STREAM_IDLE_MS = 60000; // keep-alives come every 15 s: a minute of silence is a dead link
const OVER = new Set(["finished", "abandoned"]);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function retryAfterMs(response: Response): number | null {
  const raw = response.headers.get("Retry-After");
  if (raw === null) return null;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const when = Date.parse(raw);
  return Number.isNaN(when) ? null : Math.max(0, when - Date.now());
}

async function errorFrom(response: Response): Promise<HeartsError> {
  const text = await response.text();
  let body: ErrorBody;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || typeof (parsed as { code?: unknown }).code !== "string") {
      throw new Error("not an error body");
    }
    body = parsed as ErrorBody;
  } catch {
    body = { code: `http_${response.status}`, detail: text.slice(0, 200) };
  }
  const detail = typeof body.detail === "string" ? body.detail : "";
  if (body.code === "stale_version") return new StaleVersion(body.code, detail, response.status, body);
  if (body.code === "quota_exceeded") return new QuotaExceeded(body.code, detail, response.status, body);
  if (response.status === 429 || response.status === 503) {
    const error = new RetryLater(body.code, detail, response.status, body);
    const wait = retryAfterMs(response);
    error.retryAfter = wait === null ? null : wait / 1000;
    return error;
  }
  return new HeartsError(body.code, detail, response.status, body);
}

function newKey(): string {
  return `hc-${crypto.randomUUID()}`;
}

interface CallOptions {
  body?: unknown;
  /** Sent as If-Match. */
  version?: number | null;
  /** Writes: the Idempotency-Key of this logical call (a new one when not given). */
  key?: string | null;
  write?: boolean;
  /** A write whose intent does not depend on what changed: on stale_version, again at the current version. */
  restale?: boolean;
  /** Sent as If-None-Match: a 304 answers undefined. */
  etag?: string;
  /** The answer is plain text, not JSON. */
  text?: boolean;
}

export interface ClientOptions {
  retry?: Partial<Retry>;
  fetch?: typeof fetch;
}

/**
 * A player's (player token) or an app's (API key) client. Writes send an `Idempotency-Key` that
 * their retries reuse, and `If-Match` when given a version. Retried: no answer at all (the key makes
 * it safe), 429 and 503 after `Retry-After`, other 5xx; 409 `stale_version` only for lobby writes
 * (join, leave, bots, start, abandon), at the version the 409 names. An action's `stale_version` is
 * thrown as `StaleVersion`: decide again on what the table shows now.
 */
export class HeartsClient {
  readonly base: string;
  readonly retry: Retry;
  token: string | null;
  private readonly fetcher: typeof fetch;

  constructor(baseUrl: string, token: string | null = null, options: ClientOptions = {}) {
    const base = baseUrl.replace(/\/+$/, "");
    this.base = base.endsWith("/api/v1") ? base : `${base}/api/v1`;
    this.token = token;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** A client with the token of a new guest player. */
  static async asGuest(baseUrl: string, name: string, options: ClientOptions = {}): Promise<HeartsClient> {
    const client = new HeartsClient(baseUrl, null, options);
    client.token = (await client.players.createGuest(name)).token;
    return client;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { ...extra };
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    return headers;
  }

  private delay(failures: number): number {
    return Math.min(this.retry.backoffMs * 2 ** Math.max(0, failures - 1), this.retry.maxBackoffMs);
  }

  /**
   * One logical call of the operation `op` with its retries; the decoded answer (undefined for 204),
   * typed by the document. Every method of the resources goes through here, naming its operationId
   * (tests/e2e/test_sdk_contract.py reads these names to hold the SDK to the document).
   */
  async call<Op extends OperationId, T = Answer<Op>>(op: Op, method: string, path: string, options: CallOptions = {}): Promise<T> {
    void op;
    const key = options.write ? (options.key ?? newKey()) : null;
    let version = options.version ?? null;
    for (let failures = 1; ; failures++) {
      const headers = this.headers({ Accept: "application/json" });
      if (options.body !== undefined) headers["Content-Type"] = "application/json";
      if (key !== null) headers["Idempotency-Key"] = key;
      if (version !== null) headers["If-Match"] = String(version);
      if (options.etag) headers["If-None-Match"] = options.etag;
      let response: Response;
      try {
        response = await this.fetcher(`${this.base}/${path}`, {
          method,
          headers,
          body: options.body === undefined ? null : JSON.stringify(options.body),
        });
      } catch (cause) {
        if (failures >= this.retry.attempts) {
          const detail = `${method} ${path}: ${String(cause)}`;
          throw new HeartsError("transport_error", detail, null, { code: "transport_error", detail });
        }
        await sleep(this.delay(failures));
        continue;
      }
      if (response.ok) {
        const text = await response.text();
        if (options.text) return text as T;
        return (text ? JSON.parse(text) : undefined) as T;
      }
      if (response.status === 304) return undefined as T; // If-None-Match named the current version
      const error = await errorFrom(response);
      if (failures >= this.retry.attempts) throw error;
      if (error instanceof StaleVersion && options.restale && error.version !== null) {
        version = error.version;
        continue;
      }
      if (error instanceof RetryLater) {
        const wait = error.retryAfter === null ? this.delay(failures) : error.retryAfter * 1000;
        if (wait > this.retry.maxWaitMs) throw error;
        await sleep(wait);
        continue;
      }
      if (error.status !== null && error.status >= 500) {
        await sleep(this.delay(failures));
        continue;
      }
      throw error;
    }
  }

  /** Players and their tokens. */
  readonly players = new Players(this);
  /** Who the credentials belong to. */
  readonly me = new MeResource(this);
  /** Tables: creating, seating, playing, and their history. */
  readonly tables = new Tables(this);
  /** A table's hands. */
  readonly hands = new Hands(this);
  /** Invite codes of private tables. */
  readonly invites = new Invites(this);
  /** The quick-play queue. */
  readonly quickPlay = new QuickPlay(this);
  /** Event streams and their tickets. */
  readonly streams = new Streams(this);
  /** Ratings and leaderboards. */
  readonly ratings = new Ratings(this);
  /** An app's duplicate tournaments. */
  readonly tournaments = new Tournaments(this);
  /** Bots an app brings. */
  readonly bots = new Bots(this);
  /** An app's webhook endpoints and their deliveries. */
  readonly webhooks = new Webhooks(this);
  /** The phones and browsers a player is pushed to. */
  readonly devices = new Devices(this);
  /** An app's push credentials, and the VAPID key browsers subscribe with. */
  readonly push = new Push(this);
  /** A player's data export (docs/privacy.md#export). */
  readonly exports = new Exports(this);
  /** The calling app's own settings (docs/data.md#archives-and-retention). */
  readonly app = new AppResource(this);
  readonly keys = new Keys(this);

  /**
   * GraphQL over one WebSocket at `/graphql/` as this client's token (or `options.ticket`), open
   * until `close()`: `subscribeTableEvents(tableId)` and `subscribeMyEvents()` (the streams'
   * events, resumed after a dropped socket), `submitAction`, `getTable`, `execute(query, variables)`.
   */
  socket(options: SocketOptions = {}): Promise<HeartsSocket> {
    return openSocket(this.base, this.token, this.retry, (failures) => this.delay(failures), options);
  }

  /** The stream of operation `op` (streamTableEvents, streamMyEvents) at `path`. */
  openStream(op: "streamTableEvents" | "streamMyEvents", path: string, lastEventId: string | undefined): EventStream {
    return new EventStream(this, path, {
      tableStream: op === "streamTableEvents",
      lastEventId: lastEventId ?? null,
      fetcher: this.fetcher,
      headers: () => this.headers({ Accept: "text/event-stream" }),
      delay: (failures) => this.delay(failures),
    });
  }

  /** Every item of a cursor-paged operation: `page(cursor)` asked again with the cursor `next` names. */
  async *pages<I>(page: (cursor?: string) => Promise<{ next?: string | null; results: I[] }>): AsyncGenerator<I> {
    let cursor: string | undefined;
    for (;;) {
      const answer = await page(cursor);
      yield* answer.results;
      const next = answer.next ? new URL(answer.next).searchParams.get("cursor") : null;
      if (next === null) return;
      cursor = next;
    }
  }
}

/** The query string of the filters given (undefined left out). */
function query(filters: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : "";
}

const code = (value: string): string => encodeURIComponent(value);

/** Players and their tokens (tag `players`). */
export class Players {
  constructor(private readonly c: HeartsClient) {}

  /** A self-service guest player and its token (no credentials needed). */
  createGuest(name: string): Promise<PlayerToken> {
    return this.c.call("createGuest", "POST", "guests", { body: { name }, write: true });
  }

  /** App key: a player for one of the app's users, and its token. */
  create(name: string, externalId = ""): Promise<PlayerToken> {
    return this.c.call("createPlayer", "POST", "players", { body: { name, external_id: externalId }, write: true });
  }

  /** App key: another token of one of the app's players (shown once); with `expiresIn`, it works
   * that many seconds (then 401 token_expired; `refreshToken` before then). */
  createToken(playerId: number, expiresIn?: number): Promise<Schemas["TokenOut"]> {
    const body = expiresIn === undefined ? {} : { expires_in: expiresIn };
    return this.c.call("createPlayerToken", "POST", `players/${playerId}/tokens`, { body, write: true });
  }

  /** Player token: a new token for the one this client sends, which keeps working a minute more
   * (docs/keys.md). Set the answer's `token` on the client. */
  refreshToken(expiresIn?: number): Promise<PlayerToken> {
    const body = expiresIn === undefined ? {} : { expires_in: expiresIn };
    return this.c.call("refreshToken", "POST", "tokens/refresh", { body, write: true });
  }

  /** Revoke the token this client sends (its stream tickets stop too). */
  async revokeToken(): Promise<void> {
    await this.c.call("revokeToken", "POST", "tokens/revoke", { write: true });
  }

  /** App key: erase one of your players (docs/privacy.md#erasure): their tokens stop at once,
   * their personal data goes, their games keep the seat under a pseudonym. A repeat answers the same. */
  erase(playerId: number): Promise<Erased> {
    return this.c.call("erasePlayer", "DELETE", `players/${playerId}`, { write: true });
  }
}

/** Who the credentials belong to (tag `players`). */
export class MeResource {
  constructor(private readonly c: HeartsClient) {}

  /** Who the credentials belong to, and the player's unfinished tables. */
  get(): Promise<Me> {
    return this.c.call("getMe", "GET", "me");
  }

  /** The tables where it is your turn (player token), soonest deadline first: each one's status,
   * version, your seat, what you owe (pass, play, moon), deadline and clock. */
  turns(): Promise<MyTurns> {
    return this.c.call("listMyTurns", "GET", "me/turns");
  }

  /** The language of your error details (en, mi, eu, ms, ky); null follows Accept-Language again. */
  update(language: string | null): Promise<Me> {
    return this.c.call("updateMe", "PATCH", "me", { body: { language: language ?? "" }, write: true });
  }

  /** Player token (a guest's too): erase yourself (docs/privacy.md#erasure); this token stops
   * working at once. */
  erase(): Promise<Erased> {
    return this.c.call("eraseMe", "DELETE", "me", { write: true });
  }
}

/** Tables: creating, seating, playing, and their history (tags `tables`, `play`, `history`). */
export class Tables {
  constructor(private readonly c: HeartsClient) {}

  create(
    spec: {
      options?: Record<string, unknown>;
      bots?: Record<string, SeatLevel>;
      clocks?: Record<string, number | null>;
      visibility?: "public" | "unlisted" | "private";
      invited?: number[];
      spectator_delay?: { seconds: number } | { tricks: number };
      /** Its finished game updates its people's ratings (default false). */
      rated?: boolean;
      /** Its seated players may ask for a hint on their turn (default false; never with rated; docs/hints.md). */
      hints?: boolean;
      /** Milliseconds strong and expert bots think per move (10 to 5000); left out: their fixed budgets. */
      bot_think_ms?: number;
      /** Milliseconds before each bot card played (0 to 2000); left out: the server's default (0 without a person). */
      bot_pace_ms?: number;
    } = {},
    key?: string,
  ): Promise<Table> {
    const body: Record<string, unknown> = { options: spec.options ?? {}, bots: spec.bots ?? {}, clocks: spec.clocks ?? {} };
    for (const name of ["visibility", "invited", "spectator_delay", "rated", "hints", "bot_think_ms", "bot_pace_ms"] as const) {
      if (spec[name] !== undefined) body[name] = spec[name];
    }
    return this.c.call("createTable", "POST", "tables", { body, write: true, key: key ?? null });
  }

  /** One page of tables (`next` names the following page). */
  list(filters: { status?: string; open_seats?: boolean; mine?: boolean; cursor?: string } = {}): Promise<TablePage> {
    return this.c.call("listTables", "GET", `tables${query(filters)}`);
  }

  /** Every table of every page: `for await (const t of client.tables.listAll({ status: "open" }))`. */
  listAll(filters: { status?: string; open_seats?: boolean; mine?: boolean } = {}): AsyncGenerator<TablePage["results"][number]> {
    return this.c.pages((cursor) => this.list({ ...filters, cursor }));
  }

  get(tableId: number): Promise<Table> {
    return this.c.call("getTable", "GET", `tables/${tableId}`);
  }

  /** The table, or undefined while it is still at `version` (a 304 to If-None-Match with its ETag). */
  getIfChanged(tableId: number, version: number): Promise<Table | undefined> {
    return this.c.call("getTable", "GET", `tables/${tableId}`, { etag: `W/"${version}"` });
  }

  /** Take a seat (the lowest open one without `position`); a full table starts by itself. */
  join(tableId: number, position?: number, version?: number): Promise<Table> {
    const body = position === undefined ? {} : { position };
    return this.c.call("joinTable", "POST", `tables/${tableId}/join`, { body, write: true, version: version ?? null, restale: true });
  }

  leave(tableId: number, version?: number): Promise<Table> {
    const options = { body: {}, write: true, version: version ?? null, restale: true };
    return this.c.call("leaveTable", "POST", `tables/${tableId}/leave`, options);
  }

  addBot(tableId: number, level: SeatLevel = "basic", position?: number, version?: number): Promise<Table> {
    const body = position === undefined ? { level } : { level, position };
    return this.c.call("addBot", "POST", `tables/${tableId}/bots`, { body, write: true, version: version ?? null, restale: true });
  }

  /** Start now, with bots of level `fillWith` in the open seats. */
  start(tableId: number, fillWith: SeatLevel = "basic", version?: number): Promise<Table> {
    const body = { fill_with: fillWith };
    return this.c.call("startTable", "POST", `tables/${tableId}/start`, { body, write: true, version: version ?? null, restale: true });
  }

  /** App key: close an unfinished table for good. */
  abandon(tableId: number, version?: number): Promise<Table> {
    const options = { body: {}, write: true, version: version ?? null, restale: true };
    return this.c.call("abandonTable", "POST", `tables/${tableId}/abandon`, options);
  }

  /** App key: bring an archived table of yours back into the database (docs/data.md#restoring);
   * an archived table answers its export, transcript and hands without it. */
  restore(tableId: number): Promise<Table> {
    return this.c.call("restoreTable", "POST", `tables/${tableId}/restore`, { body: {}, write: true });
  }

  /** "I'm back": a seat marked away is yours again. */
  reclaimSeat(tableId: number): Promise<Table> {
    return this.c.call("reclaimSeat", "POST", `tables/${tableId}/back`, { body: {}, write: true });
  }

  /** After a finished game: ask for a rematch, or accept it; when all have, `rematch.table` is the new table. */
  rematch(tableId: number): Promise<Table> {
    return this.c.call("requestRematch", "POST", `tables/${tableId}/rematch`, { body: {}, write: true });
  }

  /** Your seat's action on the table as of `version`; `stale_version` is thrown, never retried. */
  act(tableId: number, action: Action, version?: number, key?: string): Promise<Table> {
    const options = { body: action, write: true, version: version ?? null, key: key ?? null };
    return this.c.call("submitAction", "POST", `tables/${tableId}/actions`, options);
  }

  pass(tableId: number, cards: string[], version?: number, key?: string): Promise<Table> {
    return this.act(tableId, { type: "pass", cards }, version, key);
  }

  play(tableId: number, card: string, version?: number, key?: string): Promise<Table> {
    return this.act(tableId, { type: "play", card }, version, key);
  }

  chooseMoon(tableId: number, choice: "subtract" | "add", version?: number, key?: string): Promise<Table> {
    return this.act(tableId, { type: "moon", choice }, version, key);
  }

  scoresheet(tableId: number): Promise<Scoresheet> {
    return this.c.call("getScoresheet", "GET", `tables/${tableId}/scoresheet`);
  }

  /** The events after sequence `after` the caller may see; poll again with `after` = the answer's version. */
  events(tableId: number, after = 0): Promise<Schemas["EventsOut"]> {
    return this.c.call("listTableEvents", "GET", `tables/${tableId}/events?after=${after}`);
  }

  moves(tableId: number, after = 0): Promise<Schemas["MovesOut"]> {
    return this.c.call("listMoves", "GET", `tables/${tableId}/moves?after=${after}`);
  }

  /** On your turn at a table created with hints: the move the bot `level` (default strong) would make
   * and every legal action's estimated points for the rest of the hand, from your seat's view only
   * (422 `hints_not_allowed` with `reason` off, rated or tournament; docs/hints.md). */
  hint(tableId: number, options: { level?: "basic" | "strong" | "expert" } = {}): Promise<Hint> {
    return this.c.call("getTableHint", "GET", `tables/${tableId}/hint${query(options)}`);
  }

  /** Hand `hand` reviewed for `seat` (default: yours): per trick your card, a bot's card from the same
   * view and the estimated points lost, and your pass. Your own seat once the hand is over; every seat
   * once the game is over (422 `review_not_allowed` otherwise). */
  review(
    tableId: number,
    hand: number,
    options: { seat?: number; level?: "basic" | "strong" | "expert" } = {},
  ): Promise<HandReview> {
    return this.c.call("getHandReview", "GET", `tables/${tableId}/hands/${hand}/review${query(options)}`);
  }

  /** A finished game's whole document (422 `not_finished` before the end). */
  export(tableId: number): Promise<GameExport> {
    return this.c.call("exportGame", "GET", `tables/${tableId}/export`);
  }

  /** A finished game as plain text, for people. */
  transcript(tableId: number): Promise<string> {
    return this.c.call<"getTranscript", string>("getTranscript", "GET", `tables/${tableId}/transcript`, { text: true });
  }
}

/** A table's hands (tag `history`). */
export class Hands {
  constructor(private readonly c: HeartsClient) {}

  async list(tableId: number): Promise<Hand[]> {
    return (await this.c.call("listHands", "GET", `tables/${tableId}/hands`)).hands;
  }

  /** Hand `number` (from 1) with the moves the caller may see, and its record once over. */
  get(tableId: number, number: number): Promise<HandReplay> {
    return this.c.call("getHand", "GET", `tables/${tableId}/hands/${number}`);
  }
}

/** Invite codes of private tables (docs/lobby.md). */
export class Invites {
  constructor(private readonly c: HeartsClient) {}

  /** A new invite code of the table (shown once). */
  create(tableId: number, spec: { expires_in?: number; uses?: number } = {}): Promise<Schemas["InviteCreatedOut"]> {
    return this.c.call("createInvite", "POST", `tables/${tableId}/invites`, { body: spec, write: true });
  }

  /** The table's usable codes, by hint (never the codes): the first page, which holds them all at the default size (at most 20 a table). */
  async list(tableId: number): Promise<Schemas["InviteOut"][]> {
    return (await this.c.call("listInvites", "GET", `tables/${tableId}/invites`)).invites;
  }

  /** One page of the table's usable codes, oldest first (`next` names the following page). */
  page(tableId: number, cursor?: string): Promise<Schemas["InviteListOut"]> {
    return this.c.call("listInvites", "GET", `tables/${tableId}/invites${query({ cursor })}`);
  }

  /** Every usable code of the table, page after page. */
  listAll(tableId: number): AsyncGenerator<Schemas["InviteOut"]> {
    return this.c.pages(async (cursor) => {
      const page = await this.page(tableId, cursor);
      return { next: page.next, results: page.invites };
    });
  }

  /** Refuse this code from now on. */
  async revoke(tableId: number, invite: string): Promise<void> {
    await this.c.call("revokeInvite", "DELETE", `tables/${tableId}/invites/${code(invite)}`, { write: true });
  }

  /** The table a usable code joins, as a spectator sees it. */
  getTable(invite: string): Promise<Table> {
    return this.c.call("getInviteTable", "GET", `invites/${code(invite)}`);
  }

  /** Take a seat at the code's table with the code alone. */
  join(invite: string, position?: number): Promise<Table> {
    const body = position === undefined ? {} : { position };
    return this.c.call("joinByInvite", "POST", `invites/${code(invite)}/join`, { body, write: true });
  }
}

/** The quick-play queue (docs/lobby.md). */
export class QuickPlay {
  constructor(private readonly c: HeartsClient) {}

  /** A seat at a waiting table with these criteria, or a new one; after `wait_seconds` bots fill it. */
  join(criteria: Schemas["QuickPlayRequest"] = {}): Promise<Table> {
    return this.c.call("quickPlay", "POST", "quick-play", { body: criteria, write: true });
  }

  /** The table where you wait in quick play, or undefined. */
  async get(): Promise<Table | undefined> {
    try {
      return await this.c.call("getQuickPlay", "GET", "quick-play");
    } catch (error) {
      if (error instanceof HeartsError && error.code === "not_waiting") return undefined;
      throw error;
    }
  }

  /** Leave the quick-play queue (404 `not_waiting` when you are not in it). */
  leave(): Promise<Table> {
    return this.c.call("leaveQuickPlay", "DELETE", "quick-play", { write: true });
  }
}

/** Event streams and their tickets (tag `streams`; docs/streams.md). */
export class Streams {
  constructor(private readonly c: HeartsClient) {}

  /**
   * A table's events, resumed after drops with `Last-Event-ID` (nothing missed or repeated); it
   * ends after `table_finished` (or a 204: over, nothing left).
   */
  table(tableId: number, lastEventId?: string): EventStream {
    return this.c.openStream("streamTableEvents", `tables/${tableId}/stream`, lastEventId);
  }

  /** Player token: your events at all your tables, resumed after `lastEventId` when given. */
  mine(lastEventId?: string): EventStream {
    return this.c.openStream("streamMyEvents", "me/stream", lastEventId);
  }

  /** A 60-second ticket opening the table's stream for a client that cannot send Authorization (EventSource). */
  tableTicket(tableId: number): Promise<StreamTicket> {
    return this.c.call("createTableStreamTicket", "POST", `tables/${tableId}/stream-tickets`, { body: {}, write: true });
  }

  /** Player token: a 60-second ticket opening your own stream (all your tables). */
  myTicket(): Promise<StreamTicket> {
    return this.c.call("createPlayerStreamTicket", "POST", "me/stream-tickets", { body: {}, write: true });
  }
}

/** Ratings and leaderboards (docs/ratings.md). */
export class Ratings {
  constructor(private readonly c: HeartsClient) {}

  /** The rating model, the families and the bots' published ratings. */
  system(): Promise<RatingSystem> {
    return this.c.call("getRatingSystem", "GET", "ratings");
  }

  /** A player's rating in each family they played rated games in. */
  player(playerId: number): Promise<PlayerRatings> {
    return this.c.call("getPlayerRatings", "GET", `players/${playerId}/ratings`);
  }

  /** A page of your app's leaderboard in one family (like "classic-4"), best score first. */
  leaderboard(family: string, cursor?: string): Promise<LeaderboardPage> {
    return this.c.call("getLeaderboard", "GET", `leaderboard${query({ family, cursor })}`);
  }

  /** Every rating of the leaderboard, page after page. */
  leaderboardAll(family: string): AsyncGenerator<Rating> {
    return this.c.pages((cursor) => this.leaderboard(family, cursor));
  }

  /** A page of a player's rating changes, newest first (of one family, when given). */
  history(playerId: number, filters: { family?: string; cursor?: string } = {}): Promise<RatingHistoryPage> {
    return this.c.call("getRatingHistory", "GET", `players/${playerId}/rating-history${query(filters)}`);
  }

  /** Every rating change of a player, page after page. */
  historyAll(playerId: number, filters: { family?: string } = {}): AsyncGenerator<RatingChange> {
    return this.c.pages((cursor) => this.history(playerId, { ...filters, cursor }));
  }
}

/** An app's duplicate tournaments (docs/tournaments.md). */
export class Tournaments {
  constructor(private readonly c: HeartsClient) {}

  /** App key: a duplicate tournament, answered at once with status `starting` while a task creates and starts its tables (`tables_created`), then `running`; a `seed` makes the deals those of `python -m bots.tournament --seed`. */
  create(
    spec: {
      entrants: Entrant[];
      deal_sets: number;
      name?: string;
      options?: Record<string, unknown>;
      clocks?: Record<string, number | null>;
      seed?: string;
    },
    key?: string,
  ): Promise<Tournament> {
    return this.c.call("createTournament", "POST", "tournaments", { body: spec, write: true, key: key ?? null });
  }

  /** App key: its newest tournaments, the first page (`listAll` follows every page). */
  async list(): Promise<Tournament[]> {
    return (await this.c.call("listTournaments", "GET", "tournaments")).results;
  }

  /** App key: one page of its tournaments, newest first (`next` names the following page). */
  page(cursor?: string): Promise<Schemas["TournamentListOut"]> {
    return this.c.call("listTournaments", "GET", `tournaments${query({ cursor })}`);
  }

  /** Every tournament of the app, page after page. */
  listAll(): AsyncGenerator<Tournament> {
    return this.c.pages((cursor) => this.page(cursor));
  }

  get(tournamentId: number): Promise<Tournament> {
    return this.c.call("getTournament", "GET", `tournaments/${tournamentId}`);
  }

  /** Ranked by points relative to the others who held the same cards, with 95% intervals. */
  standings(tournamentId: number): Promise<Standings> {
    return this.c.call("getTournamentStandings", "GET", `tournaments/${tournamentId}/standings`);
  }

  /** Its tables so far: ordinary tables (tables.get, streams.table, tables.export). */
  async tables(tournamentId: number): Promise<TournamentTableRow[]> {
    return (await this.c.call("listTournamentTables", "GET", `tournaments/${tournamentId}/tables`)).results;
  }
}

/** Bots an app brings (docs/bots-byo.md). */
export class Bots {
  constructor(private readonly c: HeartsClient) {}

  /** App key: a bot endpoint that seats name as the level `ext:<name>`; the answer holds its secret, shown once. */
  register(spec: Schemas["RegisterBotRequest"]): Promise<BotEndpointWithSecret> {
    return this.c.call("registerBot", "POST", "bots", { body: spec, write: true });
  }

  /** App key: your bots with their counters: the first page, which holds them all at the default `bots` quota (20; `listAll` follows every page). */
  async list(): Promise<BotEndpoint[]> {
    return (await this.c.call("listBots", "GET", "bots")).results;
  }

  /** App key: one page of your bots, oldest first (`next` names the following page). */
  page(cursor?: string): Promise<Schemas["BotListOut"]> {
    return this.c.call("listBots", "GET", `bots${query({ cursor })}`);
  }

  /** Every bot of the app, page after page. */
  listAll(): AsyncGenerator<BotEndpoint> {
    return this.c.pages((cursor) => this.page(cursor));
  }

  get(botId: number): Promise<BotEndpoint> {
    return this.c.call("getBot", "GET", `bots/${botId}`);
  }

  /** Change a bot's name, url, timeout_ms or enabled (false: not called, its seats' moves fall back). */
  update(botId: number, changes: Schemas["PatchedUpdateBotRequest"]): Promise<BotEndpoint> {
    return this.c.call("updateBot", "PATCH", `bots/${botId}`, { body: changes, write: true });
  }

  async delete(botId: number): Promise<void> {
    await this.c.call("deleteBot", "DELETE", `bots/${botId}`, { write: true });
  }

  /** A new signing secret, shown this once; the old one stops at once. */
  rotateSecret(botId: number): Promise<BotEndpointWithSecret> {
    return this.c.call("rotateBotSecret", "POST", `bots/${botId}/secret`, { body: {}, write: true });
  }
}

/** An app's webhook endpoints and their deliveries (docs/webhooks.md). */
export class Webhooks {
  constructor(private readonly c: HeartsClient) {}

  /** App key: an endpoint for the public events of `event_types` (default every type); its secret is shown once. */
  create(spec: Schemas["CreateWebhookRequest"]): Promise<WebhookWithSecret> {
    return this.c.call("createWebhook", "POST", "webhooks", { body: spec, write: true });
  }

  /** App key: its endpoints (never their secrets): the first page (`listAll` follows every page). */
  async list(): Promise<Webhook[]> {
    return (await this.c.call("listWebhooks", "GET", "webhooks")).results;
  }

  /** App key: one page of its endpoints, oldest first (`next` names the following page). */
  page(cursor?: string): Promise<Schemas["WebhookListOut"]> {
    return this.c.call("listWebhooks", "GET", `webhooks${query({ cursor })}`);
  }

  /** Every endpoint of the app, page after page. */
  listAll(): AsyncGenerator<Webhook> {
    return this.c.pages((cursor) => this.page(cursor));
  }

  get(webhookId: number): Promise<Webhook> {
    return this.c.call("getWebhook", "GET", `webhooks/${webhookId}`);
  }

  /** Change url, event_types, description or active (false: no new deliveries). */
  update(webhookId: number, changes: Schemas["PatchedUpdateWebhookRequest"]): Promise<Webhook> {
    return this.c.call("updateWebhook", "PATCH", `webhooks/${webhookId}`, { body: changes, write: true });
  }

  /** Delete the endpoint and its deliveries. */
  async delete(webhookId: number): Promise<void> {
    await this.c.call("deleteWebhook", "DELETE", `webhooks/${webhookId}`, { write: true });
  }

  /** A new signing secret, shown this once; the old one stops signing at once. */
  rotateSecret(webhookId: number): Promise<WebhookWithSecret> {
    return this.c.call("rotateWebhookSecret", "POST", `webhooks/${webhookId}/secret`, { write: true });
  }

  /** A page of the endpoint's deliveries, newest first (of one `status`, when given). */
  deliveries(webhookId: number, filters: { status?: Delivery["status"]; cursor?: string } = {}): Promise<DeliveryPage> {
    return this.c.call("listDeliveries", "GET", `webhooks/${webhookId}/deliveries${query(filters)}`);
  }

  /** Every delivery of the endpoint, page after page. */
  deliveriesAll(webhookId: number, filters: { status?: Delivery["status"] } = {}): AsyncGenerator<Delivery> {
    return this.c.pages((cursor) => this.deliveries(webhookId, { ...filters, cursor }));
  }

  /** One delivery with its `body` and its latest attempts (`log`). */
  getDelivery(webhookId: number, deliveryId: string): Promise<DeliveryDetail> {
    return this.c.call("getDelivery", "GET", `webhooks/${webhookId}/deliveries/${code(deliveryId)}`);
  }

  /** Pending again and due now, with a fresh set of attempts. */
  redeliver(webhookId: number, deliveryId: string): Promise<Delivery> {
    const path = `webhooks/${webhookId}/deliveries/${code(deliveryId)}/redeliver`;
    return this.c.call("redeliver", "POST", path, { write: true });
  }
}

/**
 * The phones and browsers a player is pushed to (docs/push.md): a player's own with their token, or
 * (the `For` methods) one of an app's players' with the app key.
 */
export class Devices {
  constructor(private readonly c: HeartsClient) {}

  /**
   * Player token: a device of yours. `token` is the FCM registration token, the APNs device token
   * (hex; `topic`: the bundle id, else the app's) or the Web Push endpoint (with its `keys`, as
   * `PushSubscription.toJSON()` gives them); `expires_at` (at most a year ahead) stops its pushes.
   * The same token again is the same device, updated (and moved to you if another player had it).
   */
  register(device: DeviceRegistration): Promise<Device> {
    return this.c.call("registerDevice", "POST", "me/devices", { body: device, write: true });
  }

  /** Player token: your devices, oldest first (never their tokens, only `token_hint`): the first page (`listAll` follows every page). */
  async list(): Promise<Device[]> {
    return (await this.c.call("listMyDevices", "GET", "me/devices")).results;
  }

  /** Player token: one page of your devices, oldest first (`next` names the following page). */
  page(cursor?: string): Promise<Schemas["DeviceListOut"]> {
    return this.c.call("listMyDevices", "GET", `me/devices${query({ cursor })}`);
  }

  /** Every device of yours, page after page. */
  listAll(): AsyncGenerator<Device> {
    return this.c.pages((cursor) => this.page(cursor));
  }

  /** Player token: remove one of your devices. */
  async delete(deviceId: number): Promise<void> {
    await this.c.call("deleteDevice", "DELETE", `me/devices/${deviceId}`, { write: true });
  }

  /** App key: a device of one of your players, as `register` does for a player. */
  registerFor(playerId: number, device: DeviceRegistration): Promise<Device> {
    return this.c.call("registerPlayerDevice", "POST", `players/${playerId}/devices`, { body: device, write: true });
  }

  /** App key: one of your players' devices: the first page (`listAllFor` follows every page). */
  async listFor(playerId: number): Promise<Device[]> {
    return (await this.c.call("listPlayerDevices", "GET", `players/${playerId}/devices`)).results;
  }

  /** App key: one page of one of your players' devices, oldest first. */
  pageFor(playerId: number, cursor?: string): Promise<Schemas["DeviceListOut"]> {
    return this.c.call("listPlayerDevices", "GET", `players/${playerId}/devices${query({ cursor })}`);
  }

  /** Every device of one of your players, page after page. */
  listAllFor(playerId: number): AsyncGenerator<Device> {
    return this.c.pages((cursor) => this.pageFor(playerId, cursor));
  }

  /** App key: remove a device of one of your players. */
  async deleteFor(playerId: number, deviceId: number): Promise<void> {
    await this.c.call("deletePlayerDevice", "DELETE", `players/${playerId}/devices/${deviceId}`, { write: true });
  }
}

/** A player's data export job (docs/privacy.md#export): pending until its document is made, then
 * done, with the `document` URL path, until `expires_at`. */
export type ExportJob = Schemas["ExportJobOut"];

/** A player's data export (tag `privacy`, docs/privacy.md#export). */
export class Exports {
  constructor(private readonly c: HeartsClient) {}

  /** Player token: an export of all your data; `done` at once for a player of few tables, else
   * `pending` (read it with `getExport` until done). One a minute per player. */
  createMyExport(): Promise<ExportJob> {
    return this.c.call("createMyExport", "POST", "me/exports", { write: true });
  }

  /** App key: an export of one of your players' data, as `createMyExport` makes it. */
  createPlayerExport(playerId: number): Promise<ExportJob> {
    return this.c.call("createPlayerExport", "POST", `players/${playerId}/exports`, { write: true });
  }

  /** An export job (its player's token or their app's key). */
  getExport(exportId: string): Promise<ExportJob> {
    return this.c.call("getExport", "GET", `exports/${code(exportId)}`);
  }

  /** A done export's document, parsed (format `hearts-player-export/1`). */
  downloadExport(exportId: string): Promise<Record<string, unknown>> {
    return this.c.call("downloadExport", "GET", `exports/${code(exportId)}/document`);
  }

  /** The JSON Schema of the export document (no credentials needed). */
  schema(): Promise<Record<string, unknown>> {
    return this.c.call("getExportSchema", "GET", "exports/schema");
  }
}

/** The calling app's own settings (tag `apps`, docs/data.md#archives-and-retention). */
export class AppResource {
  constructor(private readonly c: HeartsClient) {}

  /** App key: your app's settings. */
  get(): Promise<AppSettings> {
    return this.c.call("getApp", "GET", "app");
  }

  /** App key: how many days your finished tables stay in the database before they move to the
   * archive, where they still export and verify (null: the service's default). */
  update(retentionDays: number | null): Promise<AppSettings> {
    return this.c.call("updateApp", "PATCH", "app", { body: { retention_days: retentionDays }, write: true });
  }

  /** App key: a page of your app's configuration changes, newest first (docs/audit.md). */
  audit(cursor?: string): Promise<AuditPage> {
    return this.c.call("listAuditEntries", "GET", `app/audit${query({ cursor })}`);
  }

  /** Every configuration change of your app, newest first, page after page. */
  auditAll(): AsyncGenerator<AuditEntry> {
    return this.c.pages((cursor) => this.audit(cursor));
  }
}

/** The app's API keys (tag `apps`, docs/keys.md): each with scopes; rotated with an overlap. */
export class Keys {
  constructor(private readonly c: HeartsClient) {}

  /** App key (keys:write): a new key with `scopes` (at most the calling key's); its `secret` is in this answer only. */
  create(scopes: string[], options: { name?: string; expiresAt?: string } = {}): Promise<ApiKeyWithSecret> {
    const body = { scopes, name: options.name ?? "", ...(options.expiresAt ? { expires_at: options.expiresAt } : {}) };
    return this.c.call("createApiKey", "POST", "app/keys", { body, write: true });
  }

  /** App key (keys:write): the key stops working at once. */
  revoke(keyId: number): Promise<ApiKey> {
    return this.c.call("revokeApiKey", "POST", `app/keys/${keyId}/revoke`, { body: {}, write: true });
  }

  /** App key (keys:write): a new key with the same name and scopes; the old one works for
   * `overlapSeconds` more (default a day), then expires. Switch to the new `secret` before then. */
  rotate(keyId: number, overlapSeconds?: number): Promise<RotatedApiKey> {
    const body = overlapSeconds === undefined ? {} : { overlap_seconds: overlapSeconds };
    return this.c.call("rotateApiKey", "POST", `app/keys/${keyId}/rotate`, { body, write: true });
  }

  /** App key (keys:read): the first page of your keys, newest first (never their secrets). */
  async list(): Promise<ApiKey[]> {
    return (await this.c.call("listApiKeys", "GET", "app/keys")).results;
  }

  /** App key (keys:read): one page of your keys (`next` names the following page). */
  page(cursor?: string): Promise<ApiKeyPage> {
    return this.c.call("listApiKeys", "GET", `app/keys${query({ cursor })}`);
  }

  /** Every key of the app, page after page. */
  listAll(): AsyncGenerator<ApiKey> {
    return this.c.pages((cursor) => this.page(cursor));
  }
}

/** An app's push credentials (FCM, APNs) and the VAPID key browsers subscribe with (docs/push.md). */
export class Push {
  constructor(private readonly c: HeartsClient) {}

  /** App key: your FCM and APNs keys' public fields (null: not set) and your VAPID key. */
  getSettings(): Promise<PushSettings> {
    return this.c.call("getPushSettings", "GET", "app/push");
  }

  /** App key: your FCM service account (the JSON key file's object); its private key is never shown again. */
  setFcm(serviceAccount: FcmServiceAccount): Promise<PushSettings> {
    return this.c.call("setFcmCredential", "PUT", "app/push/fcm", { body: { service_account: serviceAccount }, write: true });
  }

  /** App key: your APNs token key (the .p8 file's text, key id, team id, bundle id; `sandbox` for development). */
  setApns(credential: ApnsCredential): Promise<PushSettings> {
    return this.c.call("setApnsCredential", "PUT", "app/push/apns", { body: credential, write: true });
  }

  /** App key: remove your `fcm` or `apns` credential. */
  async delete(provider: "fcm" | "apns"): Promise<void> {
    if (provider === "fcm") await this.c.call("deleteFcmCredential", "DELETE", "app/push/fcm", { write: true });
    else await this.c.call("deleteApnsCredential", "DELETE", "app/push/apns", { write: true });
  }

  /** The VAPID public key to subscribe a browser with (`applicationServerKey`): your app's, or the service's own for a guest. */
  vapidKey(): Promise<VapidKey> {
    return this.c.call("getVapidKey", "GET", "push/vapid-key");
  }
}

interface StreamSetup {
  tableStream: boolean;
  lastEventId: string | null;
  fetcher: typeof fetch;
  headers: () => Record<string, string>;
  delay: (failures: number) => number;
}

/** The typed events of one stream, resumed after drops; iterate with `for await`. */
export class EventStream implements AsyncIterable<StreamEvent> {
  lastEventId: string | null;
  reconnects = 0;
  private finished = false;
  private readonly controller = new AbortController();

  constructor(
    private readonly client: HeartsClient,
    private readonly path: string,
    private readonly setup: StreamSetup,
  ) {
    this.lastEventId = setup.lastEventId;
  }

  /** Stop reading: the iteration ends and its connection is closed. */
  close(): void {
    this.finished = true;
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    const retry = this.client.retry;
    let failures = 0;
    while (!this.finished) {
      let wait: number | null = null;
      let cause: unknown = "the server ended the stream";
      const idle = new AbortController();
      const abort = (): void => idle.abort();
      this.controller.signal.addEventListener("abort", abort);
      let timer = setTimeout(abort, STREAM_IDLE_MS);
      try {
        const headers = this.setup.headers();
        if (this.lastEventId !== null) headers["Last-Event-ID"] = this.lastEventId;
        const response = await this.setup.fetcher(`${this.client.base}/${this.path}`, {
          headers,
          signal: idle.signal,
        });
        if (response.status === 204) {
          this.finished = true;
          return;
        }
        if (!response.ok || response.body === null) {
          const error = await errorFrom(response);
          failures++;
          if (failures >= retry.streamAttempts) throw error;
          if (error instanceof RetryLater) {
            wait = error.retryAfter === null ? this.setup.delay(failures) : error.retryAfter * 1000;
            if (wait > retry.maxWaitMs) throw error;
          } else if (error.status !== null && error.status >= 500) {
            wait = this.setup.delay(failures);
          } else {
            throw error;
          }
        } else {
          const queue: StreamEvent[] = [];
          const parser = createParser({
            onEvent: (message: EventSourceMessage) => {
              if (!message.data) return;
              const event = JSON.parse(message.data) as StreamEvent;
              if (message.id) this.lastEventId = message.id;
              queue.push(event);
            },
          });
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              clearTimeout(timer);
              timer = setTimeout(abort, STREAM_IDLE_MS);
              parser.feed(value);
              while (queue.length > 0) {
                const event = queue.shift() as StreamEvent;
                failures = 0;
                if (this.setup.tableStream && event.type === "table_finished") this.finished = true;
                if (event.type === "state" && OVER.has(event.state.status)) this.finished = true;
                yield event;
                if (this.finished) return;
              }
            }
          } finally {
            await reader.cancel().catch(() => undefined);
          }
        }
      } catch (error) {
        if (error instanceof HeartsError) throw error;
        if (this.finished) return; // closed
        cause = error; // the connection dropped (or went silent): resume below
      } finally {
        clearTimeout(timer);
        this.controller.signal.removeEventListener("abort", abort);
      }
      if (this.finished) return;
      if (wait === null) {
        failures++;
        this.reconnects++;
        if (failures >= retry.streamAttempts) {
          const detail = `${this.path}: ${String(cause)}`;
          throw new HeartsError("transport_error", detail, null, { code: "transport_error", detail });
        }
        wait = this.setup.delay(failures);
      }
      await sleep(wait);
    }
  }
}

/**
 * A seat played by code: override `choosePass` and `choosePlay` (or `act`), then `run(client,
 * tableId)`. It takes a seat (or finds its own), follows the table's stream and on each
 * `your_turn` reads the table and posts its action with `If-Match` and the Idempotency-Key
 * `bot-<table>-<seat>-<version>` (a retry or a restarted bot never acts twice); a `stale_version`
 * reads the table again and decides afresh.
 */
export abstract class Bot {
  abstract choosePass(view: Game, legal: LegalActions): string[];
  abstract choosePlay(view: Game, legal: LegalActions): string;

  chooseMoon(_view: Game, legal: LegalActions): "subtract" | "add" {
    return (legal.choices ?? ["subtract"]).includes("subtract") ? "subtract" : "add";
  }

  act(view: Game, legal: LegalActions): Action {
    if (legal.type === "pass") return { type: "pass", cards: this.choosePass(view, legal) };
    if (legal.type === "moon") return { type: "moon", choice: this.chooseMoon(view, legal) };
    return { type: "play", card: this.choosePlay(view, legal) };
  }

  /** Every event of the table's stream, before the bot acts on it. */
  onEvent(_event: StreamEvent): void {}

  /**
   * Play `tableId` until it is over; resolves with the table as it ended. Given a `HeartsSocket`
   * (`await client.socket()`), it plays over that one socket: `joinTable` and `submitAction`
   * mutations, the `table` query and the `tableEvents` subscription, resumed after a drop.
   */
  async run(
    client: HeartsClient | HeartsSocket,
    tableId: number,
    seat?: number,
    stream?: EventStream | SocketSubscription,
  ): Promise<Table> {
    // the REST client's calls (`client.tables`), or the socket's of the same arguments
    const tables = client instanceof HeartsClient ? client.tables : client;
    const read = (id: number): Promise<Table> => (client instanceof HeartsClient ? client.tables.get(id) : client.getTable(id));
    try {
      await (client instanceof HeartsClient ? client.tables.join(tableId, seat) : client.joinTable(tableId, seat));
    } catch (error) {
      if (!(error instanceof HeartsError) || (await read(tableId)).your_seat === null) throw error;
    }
    const events = stream ?? (client instanceof HeartsClient ? client.streams.table(tableId) : client.subscribeTableEvents(tableId));
    for await (const event of events) {
      this.onEvent(event);
      if (event.type === "your_turn") await this.turn(tables, read, tableId, client.retry.attempts);
    }
    return read(tableId);
  }

  private async turn(client: Tables | HeartsSocket, read: (id: number) => Promise<Table>, tableId: number, attempts: number): Promise<void> {
    const submit = client instanceof Tables ? client.act.bind(client) : client.submitAction.bind(client);
    for (let attempt = 0; attempt < attempts; attempt++) {
      const table = await read(tableId);
      const game = table.game;
      const seat = table.your_seat;
      const legal = game?.legal_actions;
      if (OVER.has(table.status) || !game || seat === null || !game.to_act.includes(seat) || !legal) return;
      const action = this.act(game, legal);
      try {
        await submit(tableId, action, table.version, `bot-${tableId}-${seat}-${table.version}`);
        return;
      } catch (error) {
        if (error instanceof HeartsError && error.status === 409) continue; // moved on: decide again
        if (error instanceof HeartsError && error.status === 422) return; // refused: wait for the next turn
        throw error;
      }
    }
  }
}
