/**
 * TypeScript client of the Hearts service API (docs/clients.md): the REST calls of a player or an
 * app on fetch, typed by the OpenAPI document (src/schema.d.ts, generated), with the retries of the
 * Python SDK and resumable event streams (SSE over fetch, parsed by eventsource-parser).
 */

import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { components } from "./schema.js";
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
    client.token = (await client.createGuest(name)).token;
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

  /** One logical call with its retries; the decoded answer (undefined for 204). */
  async call<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
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

  createGuest(name: string): Promise<PlayerToken> {
    return this.call("POST", "guests", { body: { name }, write: true });
  }

  createTable(
    spec: {
      options?: Record<string, unknown>;
      bots?: Record<string, SeatLevel>;
      clocks?: Record<string, number | null>;
      visibility?: "public" | "unlisted" | "private";
      invited?: number[];
      spectator_delay?: { seconds: number } | { tricks: number };
      /** Its finished game updates its people's ratings (default false). */
      rated?: boolean;
      /** Milliseconds strong and expert bots think per move (10 to 5000); left out: their fixed budgets. */
      bot_think_ms?: number;
      /** Milliseconds before each bot card played (0 to 2000); left out: the server's default (0 without a person). */
      bot_pace_ms?: number;
    } = {},
    key?: string,
  ): Promise<Table> {
    const body: Record<string, unknown> = { options: spec.options ?? {}, bots: spec.bots ?? {}, clocks: spec.clocks ?? {} };
    if (spec.visibility !== undefined) body.visibility = spec.visibility;
    if (spec.invited !== undefined) body.invited = spec.invited;
    if (spec.spectator_delay !== undefined) body.spectator_delay = spec.spectator_delay;
    if (spec.rated !== undefined) body.rated = spec.rated;
    if (spec.bot_think_ms !== undefined) body.bot_think_ms = spec.bot_think_ms;
    if (spec.bot_pace_ms !== undefined) body.bot_pace_ms = spec.bot_pace_ms;
    return this.call("POST", "tables", { body, write: true, key: key ?? null });
  }

  /** A new invite code of the table (shown once). */
  createInvite(tableId: number, spec: { expires_in?: number; uses?: number } = {}): Promise<Schemas["InviteCreatedOut"]> {
    return this.call("POST", `tables/${tableId}/invites`, { body: spec, write: true });
  }

  /** The table's usable codes, by hint (never the codes). */
  async listInvites(tableId: number): Promise<Schemas["InviteOut"][]> {
    const answer = await this.call<Schemas["InviteListOut"]>("GET", `tables/${tableId}/invites`);
    return answer.invites;
  }

  /** Refuse this code from now on. */
  async revokeInvite(tableId: number, code: string): Promise<void> {
    await this.call("DELETE", `tables/${tableId}/invites/${encodeURIComponent(code)}`, { write: true });
  }

  /** The table a usable code joins, as a spectator sees it. */
  getInviteTable(code: string): Promise<Table> {
    return this.call("GET", `invites/${encodeURIComponent(code)}`);
  }

  /** Take a seat at the code's table with the code alone. */
  joinByInvite(code: string, position?: number): Promise<Table> {
    const body = position === undefined ? {} : { position };
    return this.call("POST", `invites/${encodeURIComponent(code)}/join`, { body, write: true });
  }

  /** App key: a duplicate tournament, its tables started (docs/tournaments.md). A `seed` makes the
   * deals those of `python -m bots.tournament --seed`. */
  createTournament(
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
    return this.call("POST", "tournaments", { body: spec, write: true, key: key ?? null });
  }

  /** App key: its tournaments, newest first. */
  async listTournaments(): Promise<Tournament[]> {
    const answer = await this.call<Schemas["TournamentListOut"]>("GET", "tournaments");
    return answer.results;
  }

  getTournament(tournamentId: number): Promise<Tournament> {
    return this.call("GET", `tournaments/${tournamentId}`);
  }

  /** Ranked by points relative to the others who held the same cards, with 95% intervals. */
  getTournamentStandings(tournamentId: number): Promise<Standings> {
    return this.call("GET", `tournaments/${tournamentId}/standings`);
  }

  /** Its tables so far: ordinary tables (getTable, stream, exportGame). */
  async listTournamentTables(tournamentId: number): Promise<TournamentTableRow[]> {
    const answer = await this.call<Schemas["TournamentTablesOut"]>("GET", `tournaments/${tournamentId}/tables`);
    return answer.results;
  }

  /** App key: a bot endpoint that seats name as the level `ext:<name>`; the answer holds its secret, shown once. */
  registerBot(spec: Schemas["RegisterBotRequest"]): Promise<BotEndpointWithSecret> {
    return this.call("POST", "bots", { body: spec, write: true });
  }

  /** App key: your bots with their counters. */
  async listBots(): Promise<BotEndpoint[]> {
    return (await this.call<Schemas["BotListOut"]>("GET", "bots")).results;
  }

  getBot(botId: number): Promise<BotEndpoint> {
    return this.call("GET", `bots/${botId}`);
  }

  /** Change a bot's name, url, timeout_ms or enabled (false: not called, its seats' moves fall back). */
  updateBot(botId: number, changes: Schemas["PatchedUpdateBotRequest"]): Promise<BotEndpoint> {
    return this.call("PATCH", `bots/${botId}`, { body: changes, write: true });
  }

  async deleteBot(botId: number): Promise<void> {
    await this.call("DELETE", `bots/${botId}`, { write: true });
  }

  /** A new signing secret, shown this once; the old one stops at once. */
  rotateBotSecret(botId: number): Promise<BotEndpointWithSecret> {
    return this.call("POST", `bots/${botId}/secret`, { body: {}, write: true });
  }

  /** The language of your error details (en, mi, eu, ms, ky); null follows Accept-Language again. */
  updateMe(language: string | null): Promise<Me> {
    return this.call("PATCH", "me", { body: { language: language ?? "" }, write: true });
  }

  getTable(tableId: number): Promise<Table> {
    return this.call("GET", `tables/${tableId}`);
  }

  /** The table, or undefined while it is still at `version` (a 304 to If-None-Match with its ETag). */
  getTableIfChanged(tableId: number, version: number): Promise<Table | undefined> {
    return this.call("GET", `tables/${tableId}`, { etag: `W/"${version}"` });
  }

  /** A finished game's whole document (422 `not_finished` before the end). */
  exportGame(tableId: number): Promise<GameExport> {
    return this.call("GET", `tables/${tableId}/export`);
  }

  /** A finished game as plain text, for people. */
  getTranscript(tableId: number): Promise<string> {
    return this.call("GET", `tables/${tableId}/transcript`, { text: true });
  }

  /** Who the credentials belong to, and the player's unfinished tables. */
  getMe(): Promise<Me> {
    return this.call("GET", "me");
  }

  /**
   * A 60-second ticket opening the table's stream for a client that cannot send Authorization, such
   * as a browser's EventSource: give it `url`. (This client's own streams send the header.)
   */
  createTableStreamTicket(tableId: number): Promise<StreamTicket> {
    return this.call("POST", `tables/${tableId}/stream-tickets`, { body: {}, write: true });
  }

  /** Player token: a 60-second ticket opening your own stream (all your tables). */
  createPlayerStreamTicket(): Promise<StreamTicket> {
    return this.call("POST", "me/stream-tickets", { body: {}, write: true });
  }

  /** @deprecated Use `createTableStreamTicket` or `createPlayerStreamTicket` (REST's operationIds); kept until 2027-06-01. */
  streamTicket(tableId?: number): Promise<StreamTicket> {
    return tableId === undefined ? this.createPlayerStreamTicket() : this.createTableStreamTicket(tableId);
  }

  joinTable(tableId: number, position?: number, version?: number): Promise<Table> {
    const body = position === undefined ? {} : { position };
    return this.call("POST", `tables/${tableId}/join`, { body, write: true, version: version ?? null, restale: true });
  }

  addBot(tableId: number, level: SeatLevel = "basic", position?: number, version?: number): Promise<Table> {
    const body = position === undefined ? { level } : { level, position };
    return this.call("POST", `tables/${tableId}/bots`, { body, write: true, version: version ?? null, restale: true });
  }

  startTable(tableId: number, fillWith: SeatLevel = "basic", version?: number): Promise<Table> {
    const body = { fill_with: fillWith };
    return this.call("POST", `tables/${tableId}/start`, { body, write: true, version: version ?? null, restale: true });
  }

  leaveTable(tableId: number, version?: number): Promise<Table> {
    return this.call("POST", `tables/${tableId}/leave`, { body: {}, write: true, version: version ?? null, restale: true });
  }

  /** App key: close an unfinished table for good. */
  abandonTable(tableId: number, version?: number): Promise<Table> {
    const options = { body: {}, write: true, version: version ?? null, restale: true };
    return this.call("POST", `tables/${tableId}/abandon`, options);
  }

  /** "I'm back": a seat marked away is yours again. */
  reclaimSeat(tableId: number): Promise<Table> {
    return this.call("POST", `tables/${tableId}/back`, { body: {}, write: true });
  }

  /**
   * After a finished game: ask for a rematch, or accept the one asked for. When every person has,
   * the answer's `rematch.table` is the new table (seats moved one place on).
   */
  requestRematch(tableId: number): Promise<Table> {
    return this.call("POST", `tables/${tableId}/rematch`, { body: {}, write: true });
  }

  /**
   * A seat at a waiting table with these criteria, or a new one; after `wait_seconds` bots of
   * `bot_level` fill the open seats (null: the table closes). Its events say `match_found`.
   */
  quickPlay(criteria: Schemas["QuickPlayRequest"] = {}): Promise<Table> {
    return this.call("POST", "quick-play", { body: criteria, write: true });
  }

  /** The table where you wait in quick play, or undefined. */
  async getQuickPlay(): Promise<Table | undefined> {
    try {
      return await this.call<Table>("GET", "quick-play");
    } catch (error) {
      if (error instanceof HeartsError && error.code === "not_waiting") return undefined;
      throw error;
    }
  }

  /** Leave the quick-play queue (404 `not_waiting` when you are not in it). */
  leaveQuickPlay(): Promise<Table> {
    return this.call("DELETE", "quick-play", { write: true });
  }

  listTables(filters: { status?: string; open_seats?: boolean; mine?: boolean; cursor?: string } = {}): Promise<TablePage> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, String(value));
    const text = query.toString();
    return this.call("GET", text ? `tables?${text}` : "tables");
  }

  /** The rating model, the families and the bots' published ratings. */
  getRatingSystem(): Promise<RatingSystem> {
    return this.call("GET", "ratings");
  }

  /** A page of your app's leaderboard in one family (like "classic-4"), best score first. */
  getLeaderboard(family: string, cursor?: string): Promise<LeaderboardPage> {
    const query = new URLSearchParams({ family });
    if (cursor !== undefined) query.set("cursor", cursor);
    return this.call("GET", `leaderboard?${query.toString()}`);
  }

  /** A player's rating in each family they played rated games in. */
  getPlayerRatings(playerId: number): Promise<PlayerRatings> {
    return this.call("GET", `players/${playerId}/ratings`);
  }

  /** A page of a player's rating changes, newest first (of one family, when given). */
  getRatingHistory(playerId: number, filters: { family?: string; cursor?: string } = {}): Promise<RatingHistoryPage> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, value);
    const text = query.toString();
    return this.call("GET", `players/${playerId}/rating-history${text ? `?${text}` : ""}`);
  }

  /** The events after sequence `after` the caller may see; poll again with `after` = the answer's version. */
  listTableEvents(tableId: number, after = 0): Promise<Schemas["EventsOut"]> {
    return this.call("GET", `tables/${tableId}/events?after=${after}`);
  }

  listMoves(tableId: number, after = 0): Promise<Schemas["MovesOut"]> {
    return this.call("GET", `tables/${tableId}/moves?after=${after}`);
  }

  /** Your seat's action on the table as of `version`; `stale_version` is thrown, never retried. */
  submitAction(tableId: number, action: Action, version?: number, key?: string): Promise<Table> {
    return this.call("POST", `tables/${tableId}/actions`, {
      body: action,
      write: true,
      version: version ?? null,
      key: key ?? null,
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

  getScoresheet(tableId: number): Promise<Scoresheet> {
    return this.call("GET", `tables/${tableId}/scoresheet`);
  }

  /**
   * A table's events (`tableId`) or, without it, the player's at all their tables. After a dropped
   * connection it reconnects with `Last-Event-ID` = the last event's id: nothing missed, nothing
   * repeated. A table stream ends after `table_finished` (or a 204: over, nothing left).
   */
  streamTableEvents(tableId: number, lastEventId?: string): EventStream {
    return this.openStream(tableId, lastEventId);
  }

  /** Player token: your events at all your tables, resumed after `lastEventId` when given. */
  streamMyEvents(lastEventId?: string): EventStream {
    return this.openStream(undefined, lastEventId);
  }

  /** @deprecated Use `streamTableEvents` or `streamMyEvents` (REST's operationIds); kept until 2027-06-01. */
  stream(tableId?: number, lastEventId?: string): EventStream {
    return this.openStream(tableId, lastEventId);
  }

  /**
   * GraphQL over one WebSocket at `/graphql/` as this client's token (or `options.ticket`), open
   * until `close()`: `subscribeTableEvents(tableId)` and `subscribeMyEvents()` (the streams'
   * events, resumed after a dropped socket), `submitAction`, `getTable`, `execute(query, variables)`.
   */
  socket(options: SocketOptions = {}): Promise<HeartsSocket> {
    return openSocket(this.base, this.token, this.retry, (failures) => this.delay(failures), options);
  }

  private openStream(tableId: number | undefined, lastEventId: string | undefined): EventStream {
    return new EventStream(this, tableId === undefined ? "me/stream" : `tables/${tableId}/stream`, {
      tableStream: tableId !== undefined,
      lastEventId: lastEventId ?? null,
      fetcher: this.fetcher,
      headers: () => this.headers({ Accept: "text/event-stream" }),
      delay: (failures) => this.delay(failures),
    });
  }

  // -- old names, deprecated (docs/clients.md, "Method names"): kept until 2027-06-01 --------------

  /** @deprecated Use `updateMe` (named after REST's operationId); kept until 2027-06-01. */
  setLanguage(...args: Parameters<HeartsClient["updateMe"]>): ReturnType<HeartsClient["updateMe"]> {
    return this.updateMe(...args);
  }

  /** @deprecated Use `getMe` (named after REST's operationId); kept until 2027-06-01. */
  me(...args: Parameters<HeartsClient["getMe"]>): ReturnType<HeartsClient["getMe"]> {
    return this.getMe(...args);
  }

  /** @deprecated Use `joinTable` (named after REST's operationId); kept until 2027-06-01. */
  join(...args: Parameters<HeartsClient["joinTable"]>): ReturnType<HeartsClient["joinTable"]> {
    return this.joinTable(...args);
  }

  /** @deprecated Use `startTable` (named after REST's operationId); kept until 2027-06-01. */
  start(...args: Parameters<HeartsClient["startTable"]>): ReturnType<HeartsClient["startTable"]> {
    return this.startTable(...args);
  }

  /** @deprecated Use `leaveTable` (named after REST's operationId); kept until 2027-06-01. */
  leave(...args: Parameters<HeartsClient["leaveTable"]>): ReturnType<HeartsClient["leaveTable"]> {
    return this.leaveTable(...args);
  }

  /** @deprecated Use `abandonTable` (named after REST's operationId); kept until 2027-06-01. */
  abandon(...args: Parameters<HeartsClient["abandonTable"]>): ReturnType<HeartsClient["abandonTable"]> {
    return this.abandonTable(...args);
  }

  /** @deprecated Use `reclaimSeat` (named after REST's operationId); kept until 2027-06-01. */
  back(...args: Parameters<HeartsClient["reclaimSeat"]>): ReturnType<HeartsClient["reclaimSeat"]> {
    return this.reclaimSeat(...args);
  }

  /** @deprecated Use `requestRematch` (named after REST's operationId); kept until 2027-06-01. */
  rematch(...args: Parameters<HeartsClient["requestRematch"]>): ReturnType<HeartsClient["requestRematch"]> {
    return this.requestRematch(...args);
  }

  /** @deprecated Use `getQuickPlay` (named after REST's operationId); kept until 2027-06-01. */
  waiting(...args: Parameters<HeartsClient["getQuickPlay"]>): ReturnType<HeartsClient["getQuickPlay"]> {
    return this.getQuickPlay(...args);
  }

  /** @deprecated Use `submitAction` (named after REST's operationId); kept until 2027-06-01. */
  act(...args: Parameters<HeartsClient["submitAction"]>): ReturnType<HeartsClient["submitAction"]> {
    return this.submitAction(...args);
  }

  /** @deprecated Use `listInvites` (named after REST's operationId); kept until 2027-06-01. */
  invites(...args: Parameters<HeartsClient["listInvites"]>): ReturnType<HeartsClient["listInvites"]> {
    return this.listInvites(...args);
  }

  /** @deprecated Use `getInviteTable` (named after REST's operationId); kept until 2027-06-01. */
  inviteTable(...args: Parameters<HeartsClient["getInviteTable"]>): ReturnType<HeartsClient["getInviteTable"]> {
    return this.getInviteTable(...args);
  }

  /** @deprecated Use `listTournaments` (named after REST's operationId); kept until 2027-06-01. */
  tournaments(...args: Parameters<HeartsClient["listTournaments"]>): ReturnType<HeartsClient["listTournaments"]> {
    return this.listTournaments(...args);
  }

  /** @deprecated Use `getTournament` (named after REST's operationId); kept until 2027-06-01. */
  tournament(...args: Parameters<HeartsClient["getTournament"]>): ReturnType<HeartsClient["getTournament"]> {
    return this.getTournament(...args);
  }

  /** @deprecated Use `getTournamentStandings` (named after REST's operationId); kept until 2027-06-01. */
  tournamentStandings(...args: Parameters<HeartsClient["getTournamentStandings"]>): ReturnType<HeartsClient["getTournamentStandings"]> {
    return this.getTournamentStandings(...args);
  }

  /** @deprecated Use `listTournamentTables` (named after REST's operationId); kept until 2027-06-01. */
  tournamentTables(...args: Parameters<HeartsClient["listTournamentTables"]>): ReturnType<HeartsClient["listTournamentTables"]> {
    return this.listTournamentTables(...args);
  }

  /** @deprecated Use `listBots` (named after REST's operationId); kept until 2027-06-01. */
  bots(...args: Parameters<HeartsClient["listBots"]>): ReturnType<HeartsClient["listBots"]> {
    return this.listBots(...args);
  }

  /** @deprecated Use `getTranscript` (named after REST's operationId); kept until 2027-06-01. */
  transcript(...args: Parameters<HeartsClient["getTranscript"]>): ReturnType<HeartsClient["getTranscript"]> {
    return this.getTranscript(...args);
  }

  /** @deprecated Use `getRatingSystem` (named after REST's operationId); kept until 2027-06-01. */
  ratingSystem(...args: Parameters<HeartsClient["getRatingSystem"]>): ReturnType<HeartsClient["getRatingSystem"]> {
    return this.getRatingSystem(...args);
  }

  /** @deprecated Use `getLeaderboard` (named after REST's operationId); kept until 2027-06-01. */
  leaderboard(...args: Parameters<HeartsClient["getLeaderboard"]>): ReturnType<HeartsClient["getLeaderboard"]> {
    return this.getLeaderboard(...args);
  }

  /** @deprecated Use `getPlayerRatings` (named after REST's operationId); kept until 2027-06-01. */
  playerRatings(...args: Parameters<HeartsClient["getPlayerRatings"]>): ReturnType<HeartsClient["getPlayerRatings"]> {
    return this.getPlayerRatings(...args);
  }

  /** @deprecated Use `getRatingHistory` (named after REST's operationId); kept until 2027-06-01. */
  ratingHistory(...args: Parameters<HeartsClient["getRatingHistory"]>): ReturnType<HeartsClient["getRatingHistory"]> {
    return this.getRatingHistory(...args);
  }

  /** @deprecated Use `listTableEvents` (named after REST's operationId); kept until 2027-06-01. */
  events(...args: Parameters<HeartsClient["listTableEvents"]>): ReturnType<HeartsClient["listTableEvents"]> {
    return this.listTableEvents(...args);
  }

  /** @deprecated Use `listMoves` (named after REST's operationId); kept until 2027-06-01. */
  moves(...args: Parameters<HeartsClient["listMoves"]>): ReturnType<HeartsClient["listMoves"]> {
    return this.listMoves(...args);
  }

  /** @deprecated Use `getScoresheet` (named after REST's operationId); kept until 2027-06-01. */
  scoresheet(...args: Parameters<HeartsClient["getScoresheet"]>): ReturnType<HeartsClient["getScoresheet"]> {
    return this.getScoresheet(...args);
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
    try {
      await client.joinTable(tableId, seat);
    } catch (error) {
      if (!(error instanceof HeartsError) || (await client.getTable(tableId)).your_seat === null) throw error;
    }
    const events =
      stream ?? (client instanceof HeartsClient ? client.streamTableEvents(tableId) : client.subscribeTableEvents(tableId));
    for await (const event of events) {
      this.onEvent(event);
      if (event.type === "your_turn") await this.turn(client, tableId);
    }
    return client.getTable(tableId);
  }

  private async turn(client: HeartsClient | HeartsSocket, tableId: number): Promise<void> {
    for (let attempt = 0; attempt < client.retry.attempts; attempt++) {
      const table = await client.getTable(tableId);
      const game = table.game;
      const seat = table.your_seat;
      const legal = game?.legal_actions;
      if (OVER.has(table.status) || !game || seat === null || !game.to_act.includes(seat) || !legal) return;
      const action = this.act(game, legal);
      try {
        await client.submitAction(tableId, action, table.version, `bot-${tableId}-${seat}-${table.version}`);
        return;
      } catch (error) {
        if (error instanceof HeartsError && error.status === 409) continue; // moved on: decide again
        if (error instanceof HeartsError && error.status === 422) return; // refused: wait for the next turn
        throw error;
      }
    }
  }
}
