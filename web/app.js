// The reference web client: a person plays Hearts through the public REST API (/api/v1/) and the
// table's event stream (EventSource opened with a stream ticket; polling the events when streams
// fail). Plain ES modules, no build step, no dependencies.

import { lossChart, totalsChart } from "./chart.js";
import { EVENT_TYPES } from "./event-types.js";
import { HANDLERS } from "./events.js";
import { LANGUAGES, language, preferredLanguage, setLanguage, t, tp } from "./i18n.js";

const API = "/api/v1";
// push: the id of this browser's device at the service while notifications are on
const KEY = { token: "hearts.token", name: "hearts.name", table: "hearts.table", push: "hearts.push" };

const SUIT_SIGN = { C: "♣", D: "♦", S: "♠", H: "♥" };
const SUIT_ORDER = "CDSH"; // alternating colours
const RANKS = "23456789TJQKA";
const POLL_MS = 1000; // polling, when streams fail
const POLL_FINISHED_MS = 2500; // a finished table's stream has ended: rematch news is polled

const $ = (id) => document.getElementById(id);

const ui = {
  token: localStorage.getItem(KEY.token),
  tableId: null, // the table followed
  table: null, // its last REST body
  lastEventId: null, // the stream position, to resume after a drop
  feed: null, // how the table is followed: {source, polling, stopped}
  selected: new Set(), // cards chosen to pass
  busy: false, // an action is on its way
  acting: null, // ...and its promise
  finished: false,
  review: false, // the last trick is shown instead of the current one
  records: new Map(), // hand number -> the finished hand's record (passes revealed)
  logged: [], // the events in the log, oldest first
  fetchingRecord: new Set(),
  hint: null, // {key, answer}: the hint asked for on this turn (turnKey), shown until the turn passes
  hinting: false, // a hint is on its way
  reviews: new Map(), // "hand:seat" -> that seat's review of that finished hand
  reviewShown: null, // the "hand:seat" review on screen
  reviewing: false, // a review is on its way
};

// -- cards -------------------------------------------------------------------------------

function parseCard(card) {
  const c = card.toUpperCase();
  const rank = c.length === 3 ? "T" : c[0]; // "10H" is also accepted by the service
  return { rank, suit: c[c.length - 1] };
}

const rankWord = (rank) => ("TJQKA".includes(rank) ? t(`rank.${rank}`) : rank);

export function cardName(card) {
  const { rank, suit } = parseCard(card);
  return t("card", { rank: rankWord(rank), suit: t(`suit.${suit}`) });
}

function cardLabel(card) {
  const { rank, suit } = parseCard(card);
  return `${rank === "T" ? "10" : rank}${SUIT_SIGN[suit]}`;
}

function cardOrder(card) {
  const { rank, suit } = parseCard(card);
  return SUIT_ORDER.indexOf(suit) * 13 + RANKS.indexOf(rank);
}

export function sortHand(cards) {
  return [...cards].sort((a, b) => cardOrder(a) - cardOrder(b));
}

/** A card's face: its rank and suit in the corners and the suit large in the middle. */
function cardFace(card) {
  const { rank, suit } = parseCard(card);
  const shown = rank === "T" ? "10" : rank;
  const face = el("span", { class: `face suit-${suit}`, "aria-hidden": "true" });
  face.append(
    el("span", { class: "corner", text: `${shown}${SUIT_SIGN[suit]}` }),
    el("span", { class: "pip", text: SUIT_SIGN[suit] }),
    el("span", { class: "corner end", text: `${shown}${SUIT_SIGN[suit]}` }),
  );
  return face;
}

/** A small inline card, for lists (passes, tricks). */
function miniCard(card) {
  const { suit } = parseCard(card);
  return el("span", { class: `mini suit-${suit}`, title: cardName(card), text: cardLabel(card), "data-mini": card });
}

// -- small helpers -----------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children) node.append(child);
  return node;
}

function idempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // plain-HTTP pages have no randomUUID
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const reducedMotion = () => window.matchMedia("(prefers-reduced-motion: reduce)").matches;

function say(text, kind = "info") {
  const status = $("status");
  status.textContent = text;
  status.dataset.kind = kind;
}

class ApiError extends Error {
  constructor(status, body) {
    super(`${body.code || status}: ${body.detail || "request failed"}`);
    this.status = status;
    this.code = body.code || String(status);
    this.body = body;
  }
}

async function api(method, path, body, extraHeaders = {}) {
  // Accept-Language: the service answers an error's detail in the page's language.
  const headers = { Accept: "application/json", "Accept-Language": language(), ...extraHeaders };
  if (ui.token) headers.Authorization = `Bearer ${ui.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(API + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, { code: "network_error", detail: String(err.message || err) });
  }
  const text = await response.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { code: `http_${response.status}`, detail: response.statusText || "unexpected answer" };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

const write = (path, body = {}) => api("POST", path, body, { "Idempotency-Key": idempotencyKey() });

function showError(err) {
  say(err instanceof ApiError ? err.message : `${t("error")}: ${err.message || err}`, "error");
}

// -- seats -------------------------------------------------------------------------------

/** Where a seat sits as seen from yours (a spectator sees from seat 0): 0 is you, going left. */
function relative(table, position) {
  const n = table.seats.length;
  return (position - (table.your_seat ?? 0) + n) % n;
}

function place(table, position) {
  const n = table.seats.length;
  if (table.your_seat !== null && n === 4) return t(`compass.${relative(table, position)}`);
  return t("seat.n", { n: position + 1 });
}

function seatName(table, position) {
  const seat = table.seats[position];
  if (position === table.your_seat) return t("seat.you", { name: seat.name || t("you") });
  const where = place(table, position);
  if (seat.bot) return t("seat.bot", { where, level: t(`level.${seat.bot}`) });
  return seat.name ? t("seat.named", { where, name: seat.name }) : where;
}

function shortName(table, position) {
  return position === table.your_seat ? t("you") : place(table, position);
}

/** A seat's spot on the oval table, as x and y between -1 and 1 (you at the bottom). */
function spot(table, position) {
  const angle = (2 * Math.PI * relative(table, position)) / table.seats.length;
  return { x: -Math.sin(angle), y: Math.cos(angle) };
}

const at = (node, x, y) => {
  node.style.left = `${x}%`;
  node.style.top = `${y}%`;
};

// -- following the table: the event stream, or polling -----------------------------------

function follow(tableId) {
  stopFeed();
  const feed = { tableId, source: null, polling: false, stopped: false, failures: 0 };
  ui.feed = feed;
  openStream(feed);
}

function stopFeed() {
  if (!ui.feed) return;
  ui.feed.stopped = true;
  ui.feed.source?.close();
  ui.feed = null;
}

async function openStream(feed) {
  let url;
  try {
    // A browser's EventSource cannot send the token: a 60-second ticket opens the stream instead.
    ({ url } = await api("POST", `/tables/${feed.tableId}/stream-tickets`, {}));
  } catch (err) {
    if (feed.stopped) return;
    if (err.status === 404 || err.status === 401) {
      showError(err);
      return;
    }
    startPolling(feed); // no stream to be had: read the events instead
    return;
  }
  if (feed.stopped) return;
  if (ui.lastEventId) url += `${url.includes("?") ? "&" : "?"}last_event_id=${encodeURIComponent(ui.lastEventId)}`;
  const source = new EventSource(url);
  feed.source = source;
  $("app").dataset.feed = "stream";
  const handle = (message) => {
    if (feed.stopped) return;
    feed.failures = 0;
    onEvent(JSON.parse(message.data));
  };
  // EventSource hands each named event only to its own listeners: one for every type the service
  // can send (event-types.js, generated from its contract).
  for (const type of EVENT_TYPES) source.addEventListener(type, handle);
  source.onmessage = handle;
  source.onerror = () => {
    if (feed.stopped) return;
    if (ui.finished) {
      // A finished table's stream ends: news of a rematch is read by polling.
      source.close();
      startPolling(feed);
      return;
    }
    feed.failures += 1;
    if (feed.failures >= 4) {
      source.close();
      startPolling(feed);
    } else if (source.readyState === EventSource.CLOSED) {
      // Refused (a ticket that expired, say): a new ticket, resuming after the last event.
      say(t("status.reconnecting"), "warn");
      setTimeout(() => !feed.stopped && openStream(feed), 500 * 2 ** feed.failures);
    } else {
      say(t("status.reconnecting"), "warn"); // EventSource tries again by itself
      source.addEventListener("open", () => say(""), { once: true });
    }
  };
}

async function startPolling(feed) {
  if (feed.stopped || feed.polling) return;
  feed.polling = true;
  $("app").dataset.feed = "poll";
  let after = null;
  let delay = POLL_MS;
  while (!feed.stopped) {
    try {
      if (after === null) {
        const table = await api("GET", `/tables/${feed.tableId}`);
        after = table.version;
        render(table);
      }
      const answer = await api("GET", `/tables/${feed.tableId}/events?after=${after}`);
      if (feed.stopped) return;
      for (const event of answer.events) onEvent(event);
      after = answer.version;
      delay = ui.finished ? POLL_FINISHED_MS : POLL_MS;
      if (ui.finished && (ui.table?.rematch?.table || ui.table?.status === "abandoned")) return;
    } catch (err) {
      if (feed.stopped) return;
      showError(err);
      delay = Math.min(delay * 2, 8000);
    }
    await sleep(delay);
  }
}

// What the events do to the page (events.js): the page's side of each entry.
const page = {
  render: (table) => render(table),
  keepRecord: (record) => record && ui.records.set(record.hand, record),
  finish: () => {
    ui.finished = true;
  },
};

function onEvent(event) {
  if (event.type === "keepalive") return; // an NDJSON stream's beat (SSE's are comments): no event
  if (event.id) ui.lastEventId = event.id;
  const handler = HANDLERS[event.type]; // none only for a type newer than this page
  handler?.apply?.(event, page);
  if (handler?.log) logEvent(event);
  if (!handler?.carriesTable) scheduleRefresh();
}

// Events say that something changed; the REST table body is the one truth the page renders. A
// burst of events costs one read, and a read that is under way is followed by one more.
let refreshing = null;
let refreshAgain = false;

function scheduleRefresh() {
  if (refreshing) {
    refreshAgain = true;
    return;
  }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      await sleep(30);
      while (ui.acting) await ui.acting; // one request at a time: the action's answer comes first
      if (!ui.tableId) break;
      try {
        render(await api("GET", `/tables/${ui.tableId}`));
      } catch (err) {
        showError(err);
      }
    } while (refreshAgain);
    refreshing = null;
  })();
}

// -- the event log -----------------------------------------------------------------------

/** The page's words and names for the events' log lines (events.js). */
function view(table) {
  const number = new Intl.NumberFormat(language(), { maximumFractionDigits: 1 });
  return {
    t,
    tp,
    who: (seat) => shortName(table, seat),
    mine: (seat) => seat === table.your_seat,
    card: cardLabel,
    cards: (list) => list.map(cardLabel).join(" "),
    level: (level) => (String(level).startsWith("ext:") ? level.slice(4) : t(`level.${level}`)),
    number: (x) => number.format(x),
  };
}

/** The event's line in the log, in the page's language, or null. */
function describe(event, table) {
  return HANDLERS[event.type]?.log?.(event, view(table)) || null;
}

function logEvent(event) {
  if (!ui.table) return;
  const text = describe(event, ui.table);
  if (!text) return;
  ui.logged.push(event); // kept, to be told again in another language
  if (ui.logged.length > 300) ui.logged.shift();
  const log = $("log");
  log.prepend(el("li", { text, "data-type": event.type }));
  while (log.children.length > 300) log.lastChild.remove();
}

function retellLog() {
  if (!ui.table) return;
  const items = ui.logged.map((event) => el("li", { text: describe(event, ui.table), "data-type": event.type }));
  $("log").replaceChildren(...items.reverse());
}

// -- rendering ---------------------------------------------------------------------------

function render(table) {
  if (!table || table.id !== ui.tableId) return;
  if (ui.table && table.version < ui.table.version) return; // an older answer arrived late
  ui.table = table;
  const game = table.game;
  const app = $("app");
  app.dataset.phase = game ? game.phase : table.status;
  app.dataset.version = table.version;
  app.dataset.table = table.id;
  app.dataset.role = table.your_seat === null ? "spectator" : "player";
  const legal = game?.legal_actions || null;
  app.dataset.myTurn = legal ? legal.type : "";
  $("table-id").textContent = table.id;
  $("hand-number").textContent = game ? game.hand_number : "–";
  $("role").hidden = table.your_seat !== null;
  $("hints-on").hidden = !table.hints;
  if (table.status === "finished" || table.status === "abandoned") ui.finished = true;
  renderSeats(table);
  renderTrick(table);
  renderHand(table);
  renderHint(table);
  renderPass(table);
  $("moon-panel").hidden = legal?.type !== "moon";
  renderWait(table);
  renderOver(table);
  renderPasses(table);
  renderTricks(table);
  renderSheet(table);
  renderChart(table);
  renderReviewPanel(table);
  renderTurn(table);
  const me = table.seats[table.your_seat];
  $("back").hidden = !me?.away;
  wantRecords(table);
}

/** The page as it is, again: after the language changed. */
function rerender() {
  if (!ui.table) return;
  const table = ui.table;
  ui.table = null;
  resetTrick();
  render(table);
}

function renderSeats(table) {
  const game = table.game;
  const list = $("seats");
  list.replaceChildren();
  const asked = new Set(table.rematch?.asked || []);
  table.seats.forEach((seat, i) => {
    const acting = game?.to_act?.includes(i);
    const { x, y } = spot(table, i);
    const side = x < -0.5 ? " side-left" : x > 0.5 ? " side-right" : ""; // held inside the rim
    const item = el("li", {
      class: `seat${i === table.your_seat ? " mine" : ""}${acting ? " acting" : ""}${side}`,
      "data-seat": i,
      "data-rel": relative(table, i),
      "aria-label": seatName(table, i),
    });
    at(item, 50 + x * 41, 50 + y * 41);
    const mine = i === table.your_seat;
    item.append(el("strong", { class: "seat-name", text: mine ? t("you") : place(table, i) }));
    let who = mine ? seat.name : seat.bot ? t("seat.botKind", { level: t(`level.${seat.bot}`) }) : seat.name;
    if (!seat.bot && seat.player === null) {
      who = t("seat.empty");
      item.classList.add("empty");
    }
    if (who) item.append(el("span", { class: "seat-kind", text: who }));
    if (game) {
      const line = el("span", { class: "seat-score" });
      line.append(
        el("span", { text: t("seat.score", { score: game.scores[i] }) }),
        el("span", { "aria-hidden": "true", text: "·" }),
        el("span", { class: "taken", text: t("seat.taken", { points: game.points_taken[i] }) }),
      );
      item.append(line);
      if (game.phase === "passing" && game.passed?.[i]) item.append(el("span", { class: "tag", text: t("seat.passed") }));
      if (game.winners?.includes(i)) item.append(el("span", { class: "tag win", text: t("seat.winner") }));
    }
    if (asked.has(i)) item.append(el("span", { class: "tag", text: t("seat.rematch") }));
    if (seat.away) item.append(el("span", { class: "tag away", text: t("seat.away") }));
    list.append(item);
  });
}

// The trick in the middle: each card lies by the seat that played it. A card played since the
// last render flies in from its seat; a trick taken slides to its winner. The page reads REST
// after each burst of events, so one render may bring several cards and a finished trick.
const trickView = { table: null, hand: null, done: 0, shown: new Map() };

function resetTrick() {
  $("trick").replaceChildren();
  trickView.table = null;
  trickView.hand = null;
  trickView.shown.clear();
}

function trickCard(table, seat, card, order, animate) {
  const { x, y } = spot(table, seat);
  const item = el(
    "li",
    { class: "played", "data-seat": seat, "data-played": card, "aria-label": `${seatName(table, seat)}: ${cardName(card)}` },
    cardFace(card),
  );
  const rest = [50 + x * 15, 50 + y * 21];
  if (animate && !reducedMotion()) {
    at(item, 50 + x * 42, 50 + y * 42);
    item.classList.add("incoming");
    item.style.transitionDelay = `${order * 110}ms`;
    $("trick").append(item);
    item.getBoundingClientRect(); // lay it out at the seat first, so that the move is animated
    item.classList.remove("incoming");
  } else {
    $("trick").append(item);
  }
  at(item, ...rest);
  return item;
}

function collect(table, items, winner, pause) {
  const target = winner === null || winner === undefined ? { x: 0, y: 0 } : spot(table, winner);
  const go = () => {
    for (const item of items) {
      item.classList.add("collected");
      item.style.transitionDelay = "0ms";
      at(item, 50 + target.x * 41, 50 + target.y * 41);
    }
    setTimeout(() => items.forEach((item) => item.remove()), reducedMotion() ? 0 : 520);
  };
  if (reducedMotion()) setTimeout(go, Math.min(pause, 400));
  else setTimeout(go, pause);
}

function renderTrick(table) {
  const game = table.game;
  const box = $("trick");
  box.dataset.review = ui.review ? "true" : "false";
  if (ui.review) {
    renderReview(table);
    return;
  }
  if (!game) {
    resetTrick();
    $("trick-note").textContent = "";
    return;
  }
  if (trickView.table !== table.id || trickView.hand !== game.hand_number) {
    const sameTable = trickView.table === table.id; // a new hand: its tricks are all to show
    if (sameTable) collect(table, [...trickView.shown.values()], null, 0);
    else box.replaceChildren(); // a table opened: what was played before is not animated
    trickView.shown.clear();
    trickView.table = table.id;
    trickView.hand = game.hand_number;
    trickView.done = sameTable ? 0 : game.tricks.length;
  }
  let order = 0;
  const key = (seat, card) => `${seat}:${card}`;
  // Tricks taken since the last render: show what had not been shown yet, then slide them away.
  while (trickView.done < game.tricks.length) {
    const trick = game.tricks[trickView.done];
    trickView.done += 1;
    const items = trick.cards.map(({ seat, card }) => {
      const shown = trickView.shown.get(key(seat, card));
      trickView.shown.delete(key(seat, card));
      return shown || trickCard(table, seat, card, order++, true);
    });
    collect(table, items, trick.winner, 650 + order * 110);
  }
  for (const { seat, card } of game.trick) {
    if (!trickView.shown.has(key(seat, card))) {
      trickView.shown.set(key(seat, card), trickCard(table, seat, card, order++, true));
    }
  }
  const note = $("trick-note");
  const last = game.tricks[game.tricks.length - 1];
  if (game.trick.length) note.textContent = "";
  else if (game.phase === "passing") note.textContent = t("trick.passing");
  else if (last) note.textContent = tp("trick.won", last.points, { who: shortName(table, last.winner ?? 0), trick: game.tricks.length });
  else note.textContent = game.winners ? "" : t("trick.none");
  $("last-trick").disabled = !lastTrick(table);
}

/** The last trick taken: this hand's, or else the previous hand's (from its record). */
function lastTrick(table) {
  const game = table.game;
  if (!game) return null;
  const taken = game.tricks.filter((trick) => trick.winner !== null);
  if (taken.length) return { ...taken[taken.length - 1], hand: game.hand_number, number: game.tricks.length };
  const hand = game.winners ? game.hand_number : game.hand_number - 1;
  const record = ui.records.get(hand);
  if (!record?.tricks?.length) return null;
  const n = table.seats.length;
  const trick = record.tricks[record.tricks.length - 1];
  return {
    hand,
    number: record.tricks.length,
    winner: trick.winner,
    points: null,
    cards: trick.cards.map((card, i) => ({ seat: (trick.leader + i) % n, card })),
  };
}

function renderReview(table) {
  const box = $("trick");
  box.replaceChildren();
  trickView.shown.clear();
  trickView.table = null;
  const trick = lastTrick(table);
  if (!trick) {
    setReview(false);
    return;
  }
  for (const { seat, card } of trick.cards) trickCard(table, seat, card, 0, false);
  const who = shortName(table, trick.winner ?? 0);
  $("trick-note").textContent = t("trick.review", { hand: trick.hand, trick: trick.number, who });
}

function setReview(on) {
  ui.review = on;
  $("last-trick").setAttribute("aria-pressed", on ? "true" : "false");
  $("felt").classList.toggle("reviewing", on);
  if (!on) resetTrick();
  if (ui.table) renderTrick(ui.table);
}

function renderHand(table) {
  const game = table.game;
  const hand = $("hand");
  const active = document.activeElement;
  const hadFocus = hand.contains(active);
  const focused = active?.dataset?.card || null;
  const focusIndex = hadFocus ? [...hand.children].indexOf(active) : -1;
  hand.replaceChildren();
  $("hand-title").parentElement.hidden = !game?.hand?.length;
  if (!game?.hand?.length) return;
  const legal = game.legal_actions;
  const playable = legal?.type === "play" ? new Set(legal.cards) : null;
  const passing = legal?.type === "pass";
  const received = new Set(game.received?.cards || []);
  for (const card of [...ui.selected]) if (!passing || !game.hand.includes(card)) ui.selected.delete(card);
  const buttons = [];
  for (const card of sortHand(game.hand)) {
    const button = el("button", {
      type: "button",
      class: `card${received.has(card) ? " received" : ""}`,
      "data-card": card,
      "aria-label": cardName(card) + (received.has(card) ? ` (${t("hand.received")})` : ""),
      tabindex: "-1",
    });
    button.append(cardFace(card));
    if (passing) {
      button.setAttribute("aria-pressed", ui.selected.has(card) ? "true" : "false");
      button.disabled = ui.busy;
      button.addEventListener("click", () => toggle(card));
    } else {
      button.disabled = ui.busy || !playable || !playable.has(card);
      button.addEventListener("click", () => act({ type: "play", card }));
    }
    hand.append(button);
    buttons.push(button);
  }
  // One card is in the tab order (roving tabindex); the arrow keys move between the others.
  const enabled = buttons.filter((b) => !b.disabled);
  const keep = enabled.find((b) => b.dataset.card === focused)
    || (focusIndex >= 0 ? enabled.reduce((best, b) => (!best || Math.abs(buttons.indexOf(b) - focusIndex) < Math.abs(buttons.indexOf(best) - focusIndex) ? b : best), null) : null)
    || enabled[0];
  markHint(table, buttons);
  if (keep) keep.tabIndex = 0;
  hand.tabIndex = keep ? -1 : 0;
  if (hadFocus) (keep || hand).focus(); // keyboard players stay in their hand across renders
  const got = game.received;
  $("received-note").textContent = got ? t("hand.receivedFrom", { cards: got.cards.map(cardLabel).join(" "), from: shortName(table, got.from) }) : "";
}

// -- hints: the bot's suggestion for your turn, with each legal card's estimated points ----------

/** Your turn to pass or play, as one string that changes once the turn is taken (or passes by). */
function turnKey(table) {
  const game = table?.game;
  const legal = game?.legal_actions;
  if (!legal || (legal.type !== "pass" && legal.type !== "play") || table.your_seat === null) return null;
  return [table.id, game.hand_number, legal.type, game.hand.length, game.tricks.length, game.trick.length].join(":");
}

/** The hint of this turn, if one was asked for; a hint of a turn gone by is dropped. */
function currentHint(table) {
  if (ui.hint && ui.hint.key !== turnKey(table)) ui.hint = null;
  return ui.hint?.answer || null;
}

const fmtPoints = (x) => new Intl.NumberFormat(language(), { maximumFractionDigits: 1 }).format(x);
const actionCards = (action) => (action.type === "play" ? [action.card] : action.cards || []);
const sameCards = (a, b) => [...a].sort().join(" ") === [...b].sort().join(" ");

/** The hinted card(s) stand out; each playable card carries its estimated points. */
function markHint(table, buttons) {
  const hint = currentHint(table);
  if (!hint) return;
  const chosen = new Set(actionCards(hint.choice));
  const estimate = new Map(
    hint.options.filter((option) => option.action.type === "play").map((option) => [option.action.card, option.points]),
  );
  for (const button of buttons) {
    const card = button.dataset.card;
    if (chosen.has(card)) {
      button.classList.add("hinted");
      button.dataset.hinted = "true";
    }
    if (estimate.has(card)) {
      const value = estimate.get(card);
      button.dataset.estimate = String(value);
      button.append(el("span", { class: "estimate", "aria-hidden": "true", text: fmtPoints(value) }));
      button.setAttribute("aria-label", `${button.getAttribute("aria-label")}, ${t("hint.estimate", { points: fmtPoints(value) })}`);
    }
  }
}

function renderHint(table) {
  const key = turnKey(table);
  const box = $("hint-box");
  box.hidden = !table.hints || !key || Boolean(table.game?.winners);
  const hint = currentHint(table);
  $("hint").disabled = ui.hinting || ui.busy || Boolean(hint);
  const note = $("hint-note");
  const list = $("hint-options");
  list.replaceChildren();
  box.dataset.state = hint ? "shown" : ui.hinting ? "asking" : "none";
  if (box.hidden || !hint) {
    note.textContent = ui.hinting && !box.hidden ? t("hint.asking") : "";
    return;
  }
  const chosen = actionCards(hint.choice);
  const best = hint.options.find((option) => sameCards(actionCards(option.action), chosen));
  const expect = best ? fmtPoints(best.points) : "–";
  note.textContent =
    hint.choice.type === "play"
      ? t("hint.play", { card: cardName(hint.choice.card), points: expect })
      : t("hint.pass", { cards: chosen.map(cardLabel).join(" "), points: expect });
  const options = [...hint.options].sort((a, b) => a.points - b.points);
  for (const option of options) {
    const cards = actionCards(option.action);
    const mine = sameCards(cards, chosen);
    const item = el("li", { class: mine ? "chosen" : null, "data-action": cards.join(" "), "data-points": option.points });
    for (const card of cards) item.append(miniCard(card), " ");
    item.append(el("span", { text: t("hint.points", { points: fmtPoints(option.points) }) }));
    list.append(item);
  }
}

/** A hint or a review: computed on the service's hints lane, which may answer service_unavailable
 * while it is busy and keep computing; the page asks again after retry_after (twice at most). */
async function patiently(path, still) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await api("GET", path);
    } catch (err) {
      if (err.code !== "service_unavailable" || attempt >= 2 || !still()) throw err;
      await sleep(1000 * Math.min(5, Math.max(1, Number(err.body.retry_after) || 1)));
    }
  }
}

async function askHint() {
  const table = ui.table;
  const key = turnKey(table);
  if (!key || ui.hinting) return;
  ui.hinting = true;
  renderHint(table);
  try {
    const answer = await patiently(`/tables/${table.id}/hint`, () => turnKey(ui.table) === key);
    if (turnKey(ui.table) === key) ui.hint = { key, answer };
    say("");
  } catch (err) {
    showError(err); // rate_limited, hints_not_allowed...: the service's words, in the page's language
  } finally {
    ui.hinting = false;
    if (ui.table) {
      renderHand(ui.table);
      renderHint(ui.table);
    }
  }
}

// -- the review of a finished hand: per trick, the card played, the bot's choice, points lost ---

/** Hands that are over; your own seat's review, or every seat's once the game is over. */
function renderReviewPanel(table) {
  const rows = table.game?.scoresheet || [];
  const over = table.status === "finished";
  const seated = table.your_seat !== null;
  const panel = $("review-panel");
  panel.hidden = !rows.length || !(seated || over);
  if (panel.hidden) {
    $("review-out").replaceChildren();
    ui.reviewShown = null;
    return;
  }
  const hands = $("review-hand");
  const shape = `${table.id}:${rows.length}:${language()}`;
  if (hands.dataset.shape !== shape) {
    hands.dataset.shape = shape;
    hands.replaceChildren(...rows.map((row) => el("option", { value: row.hand, text: String(row.hand) })));
    hands.value = String(rows[rows.length - 1].hand); // the hand just over
  }
  const seats = $("review-seat");
  const seatShape = `${table.id}:${over}:${language()}`;
  if (seats.dataset.shape !== seatShape) {
    seats.dataset.shape = seatShape;
    const choices = over ? table.seats.map((_, i) => i) : [table.your_seat];
    seats.replaceChildren(...choices.map((i) => el("option", { value: i, text: seatName(table, i) })));
    seats.value = String(seated ? table.your_seat : 0);
  }
  $("review-seat-line").hidden = !over;
  $("review-go").disabled = ui.reviewing;
  if (ui.reviewShown && $("review-out").dataset.lang !== language()) showHandReview(table, ui.reviews.get(ui.reviewShown));
}

async function askReview(event) {
  event?.preventDefault();
  const table = ui.table;
  if (!table || ui.reviewing) return;
  const hand = Number($("review-hand").value);
  const seat = Number($("review-seat").value);
  const key = `${hand}:${seat}`;
  if (ui.reviews.has(key)) {
    ui.reviewShown = key;
    showHandReview(table, ui.reviews.get(key));
    return;
  }
  ui.reviewing = true;
  $("review-go").disabled = true;
  $("review-out").replaceChildren(el("p", { class: "muted", text: t("review.asking") }));
  try {
    const answer = await patiently(`/tables/${table.id}/hands/${hand}/review?seat=${seat}`, () => ui.tableId === table.id);
    if (ui.tableId !== table.id) return;
    ui.reviews.set(key, answer);
    ui.reviewShown = key;
    showHandReview(ui.table, answer);
    say("");
  } catch (err) {
    $("review-out").replaceChildren();
    showError(err); // review_not_allowed, rate_limited...: as every other refusal
  } finally {
    ui.reviewing = false;
    $("review-go").disabled = false;
  }
}

function showHandReview(table, review) {
  const out = $("review-out");
  out.dataset.lang = language();
  out.dataset.hand = review.hand;
  out.dataset.seat = review.seat;
  const who = shortName(table, review.seat);
  const total = fmtPoints(review.total_points_lost);
  const caption = t("review.caption", { who, hand: review.hand });
  const parts = [el("h4", { text: caption })];
  parts.push(
    lossChart({
      tricks: review.tricks,
      total: review.total_points_lost,
      title: caption,
      description: t("review.description", {
        lost: review.tricks.map((trick) => `${trick.trick}: ${fmtPoints(trick.points_lost)}`).join(", "),
      }),
      trickLabel: t("table.trick"),
      totalText: t("review.total", { points: total }),
      format: fmtPoints,
    }),
  );
  if (review.pass) {
    const line = el("p", { class: "review-pass" });
    line.append(t("review.passed"), " ");
    for (const card of review.pass.cards) line.append(miniCard(card), " ");
    line.append(t("review.botPassed"), " ");
    for (const card of review.pass.bot_cards) line.append(miniCard(card), " ");
    line.append(el("span", { text: `(${t("review.lost", { points: fmtPoints(review.pass.points_lost) })})` }));
    parts.push(line);
  }
  const grid = el("table", { class: "review-table" });
  const head = el("tr");
  for (const text of [t("review.trick"), t("review.card"), t("review.bot"), t("review.pointsLost")]) {
    head.append(el("th", { scope: "col", text })); // keys written out: tests/e2e/test_web_i18n.py reads them
  }
  grid.append(el("thead", {}, head));
  const body = el("tbody");
  for (const trick of review.tricks) {
    const same = trick.card === trick.bot_card;
    const row = el("tr", { "data-trick": trick.trick, "data-points-lost": trick.points_lost, class: same ? "same" : null });
    row.append(
      el("th", { scope: "row", text: String(trick.trick) }),
      el("td", {}, miniCard(trick.card)),
      el("td", {}, miniCard(trick.bot_card)),
      el("td", { text: fmtPoints(trick.points_lost) }),
    );
    body.append(row);
  }
  grid.append(body);
  const foot = el("tr");
  foot.append(el("th", { scope: "row", colspan: 3, text: t("review.totalLabel") }), el("td", { class: "review-total", text: total }));
  grid.append(el("tfoot", {}, foot));
  parts.push(el("div", { class: "sheet-wrap" }, grid));
  out.replaceChildren(...parts);
}

function moveFocus(event) {
  const keys = { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1, Home: -Infinity, End: Infinity };
  if (!(event.key in keys)) return;
  const cards = [...$("hand").querySelectorAll("[data-card]:not(:disabled)")];
  if (!cards.length) return;
  event.preventDefault();
  const step = keys[event.key];
  const now = cards.indexOf(document.activeElement);
  let next;
  if (step === -Infinity) next = 0;
  else if (step === Infinity) next = cards.length - 1;
  else next = now < 0 ? 0 : (now + step + cards.length) % cards.length;
  for (const card of cards) card.tabIndex = -1;
  cards[next].tabIndex = 0;
  cards[next].focus();
}

function passTarget(table) {
  const game = table.game;
  const n = table.seats.length;
  const offset = { left: 1, right: n - 1, across: 2 }[game.pass_direction];
  return offset === undefined || table.your_seat === null ? null : (table.your_seat + offset) % n;
}

function renderPass(table) {
  const game = table.game;
  const panel = $("pass-panel");
  const show = game?.phase === "passing" && table.your_seat !== null;
  panel.hidden = !show;
  if (!show) return;
  const legal = game.legal_actions;
  const to = passTarget(table);
  const params = { direction: t(`dir.${game.pass_direction}`), target: to === null ? "" : shortName(table, to) };
  if (legal?.type === "pass") {
    $("pass-direction").textContent = t("pass.choose", { ...params, count: legal.count, chosen: ui.selected.size });
    $("pass").disabled = ui.busy || ui.selected.size !== legal.count;
    $("pass").hidden = false;
  } else {
    const mine = game.my_pass?.cards || [];
    $("pass-direction").textContent = mine.length
      ? t("pass.done", { ...params, cards: mine.map(cardLabel).join(" ") })
      : t("pass.waiting");
    $("pass").hidden = true;
  }
  panel.dataset.direction = game.pass_direction;
}

// Who passed what to whom: your own pass and what you received in this hand; every seat's pass
// of the hands that are over (their records are public then).
function wantRecords(table) {
  const game = table.game;
  if (!game) return;
  const last = game.winners ? game.hand_number : game.hand_number - 1;
  for (const hand of [last, last - 1]) {
    if (hand < 1 || ui.records.has(hand) || ui.fetchingRecord.has(hand)) continue;
    ui.fetchingRecord.add(hand);
    const tableId = table.id;
    api("GET", `/tables/${tableId}/hands/${hand}`)
      .then((answer) => {
        if (answer.record && ui.tableId === tableId) {
          ui.records.set(hand, answer.record);
          renderPasses(ui.table);
          if (ui.table) $("last-trick").disabled = !lastTrick(ui.table);
        }
      })
      .catch(() => {})
      .finally(() => ui.fetchingRecord.delete(hand));
  }
}

function passLine(table, from, to, cards, hand) {
  const item = el("li", { "data-hand": hand, "data-from": from, "data-to": to ?? "" });
  item.append(el("span", { class: "who", text: t("passes.line", { from: shortName(table, from), to: to === null ? "" : shortName(table, to) }) }));
  if (cards) for (const card of cards) item.append(" ", miniCard(card));
  else item.append(" ", el("span", { class: "muted", text: t("passes.hidden") }));
  return item;
}

function renderPasses(table) {
  const box = $("passes");
  box.replaceChildren();
  const game = table?.game;
  if (!game) return;
  const n = table.seats.length;
  const offsetOf = (direction) => ({ left: 1, right: n - 1, across: 2 }[direction]);
  // This hand.
  const now = el("div", { class: "pass-hand", "data-hand": game.hand_number });
  now.append(el("h4", { text: t("passes.hand", { hand: game.hand_number, direction: t(`dir.${game.pass_direction}`) }) }));
  const list = el("ul");
  if (game.pass_direction === "hold" || offsetOf(game.pass_direction) === undefined) {
    list.append(el("li", { class: "muted", text: t("passes.hold") }));
  } else {
    const off = offsetOf(game.pass_direction);
    const revealed = game.winners ? ui.records.get(game.hand_number) : null;
    table.seats.forEach((_, s) => {
      const to = (s + off) % n;
      if (revealed) list.append(passLine(table, s, to, revealed.passes[s].cards, game.hand_number));
      else if (s === table.your_seat && game.my_pass) list.append(passLine(table, s, to, game.my_pass.cards, game.hand_number));
      else if (to === table.your_seat && game.received) list.append(passLine(table, s, to, game.received.cards, game.hand_number));
      else if (game.phase === "passing" && !game.passed?.[s] && s !== table.your_seat) list.append(el("li", { "data-from": s, class: "muted", text: t("passes.notYet", { who: shortName(table, s) }) }));
      else if (s !== table.your_seat) list.append(passLine(table, s, to, null, game.hand_number));
    });
  }
  now.append(list);
  box.append(now);
  // The hand before, all revealed.
  const previous = ui.records.get(game.hand_number - 1);
  if (previous && !game.winners) {
    const old = el("div", { class: "pass-hand", "data-hand": previous.hand });
    old.append(el("h4", { text: t("passes.hand", { hand: previous.hand, direction: t(`dir.${previous.pass_direction}`) }) }));
    const items = el("ul");
    if (previous.pass_direction === "hold") items.append(el("li", { class: "muted", text: t("passes.hold") }));
    else previous.passes.forEach((pass, s) => items.append(passLine(table, s, pass.to, pass.cards, previous.hand)));
    old.append(items);
    box.append(old);
  }
}

function renderTricks(table) {
  const list = $("tricks");
  list.replaceChildren();
  const game = table.game;
  if (!game) return;
  game.tricks.forEach((trick, i) => {
    const item = el("li", { "data-trick": i + 1 });
    item.append(el("span", { class: "muted", text: `${i + 1}. ` }));
    for (const { seat, card } of trick.cards) {
      const part = el("span", { class: "trick-card", title: `${seatName(table, seat)}: ${cardName(card)}` });
      part.append(`${shortName(table, seat)} `, miniCard(card), " ");
      item.append(part);
    }
    const winner = trick.winner === null ? "–" : shortName(table, trick.winner);
    item.append(el("strong", { text: `→ ${winner}${trick.points ? ` (${trick.points})` : ""}` }));
    list.append(item);
  });
}

function renderSheet(table) {
  const game = table.game;
  const head = $("sheet-head");
  head.replaceChildren(el("th", { scope: "col", text: t("sheet.hand") }));
  table.seats.forEach((_, i) => head.append(el("th", { scope: "col", "data-seat": i, text: shortName(table, i) })));
  const body = $("sheet-body");
  body.replaceChildren();
  for (const row of game?.scoresheet || []) {
    const tr = el("tr", { "data-hand": row.hand });
    tr.append(el("th", { scope: "row", text: row.moon ? `${row.hand} 🌙` : String(row.hand) }));
    row.points.forEach((points, i) => {
      const cell = el("td", { "data-seat": i, "data-points": points, "data-total": row.totals[i] });
      cell.append(`${points} `, el("small", { class: "muted", text: `(${row.totals[i]})` }));
      tr.append(cell);
    });
    body.append(tr);
  }
  const now = $("sheet-now");
  now.replaceChildren();
  if (game && !game.winners) {
    now.append(el("th", { scope: "row", text: t("sheet.now") }));
    game.points_taken.forEach((p, i) => now.append(el("td", { "data-seat": i, text: String(p) })));
  }
}

function renderChart(table) {
  const game = table.game;
  const rows = game?.scoresheet || [];
  const box = $("chart");
  if (String(rows.length) === box.dataset.hands && box.dataset.lang === language() && box.dataset.table === String(table.id)) return;
  box.dataset.hands = rows.length;
  box.dataset.lang = language();
  box.dataset.table = table.id;
  box.replaceChildren();
  if (!rows.length) {
    box.append(el("p", { class: "muted", text: t("chart.empty") }));
    return;
  }
  const names = table.seats.map((_, i) => shortName(table, i));
  box.append(
    totalsChart({
      rows,
      names,
      target: table.options?.target_score || 100,
      title: t("chart.title"),
      description: t("chart.description", {
        totals: names.map((name, i) => `${name} ${rows[rows.length - 1].totals[i]}`).join(", "),
      }),
      handLabel: t("sheet.hand"),
      mine: table.your_seat,
    }),
  );
}

function renderOver(table) {
  const game = table.game;
  const panel = $("over-panel");
  const over = Boolean(game?.winners) || table.status === "abandoned";
  panel.hidden = !over;
  if (!over) return;
  if (game?.winners) $("game-over").textContent = t("over.won", { who: game.winners.map((w) => shortName(table, w)).join(` ${t("and")} `) });
  else $("game-over").textContent = t("over.closed");
  const rematch = table.rematch;
  const seated = table.your_seat !== null;
  const asked = rematch?.asked || [];
  $("rematch").hidden = !seated || table.status !== "finished" || asked.includes(table.your_seat) || Boolean(rematch?.table);
  $("rematch").textContent = asked.length ? t("rematch.accept") : t("rematch.ask");
  $("rematch-open").hidden = !rematch?.table;
  if (rematch?.table) $("rematch-note").textContent = t("rematch.started", { table: rematch.table });
  else if (asked.length) $("rematch-note").textContent = t("rematch.asked", { who: asked.map((s) => shortName(table, s)).join(", ") });
  else $("rematch-note").textContent = seated ? t("rematch.offer") : "";
  if (rematch?.table && seated && !ui.movingTo) {
    ui.movingTo = rematch.table; // everyone said yes: on to the new table
    setTimeout(() => open(rematch.table), 600);
  }
}

/** An open table you sit at: a quick-play table waits for people until its deadline; a table of
 * yours waits for the friends you invite, or starts now with bots. */
function renderWait(table) {
  const waiting = table.status === "open" && table.your_seat !== null;
  $("wait-panel").hidden = !waiting;
  if (!waiting) {
    $("invite-out").hidden = true;
    return;
  }
  const quick = Boolean(table.deadline);
  $("quick-cancel").hidden = !quick;
  $("invite").hidden = quick;
  $("start-now").hidden = quick;
  if (!quick) $("wait-note").textContent = t("wait.invite");
}

// -- whose turn and the clock ------------------------------------------------------------

function renderTurn(table) {
  const game = table.game;
  const turn = $("turn");
  if (!game) {
    turn.textContent = t(`status.${table.status}`);
  } else if (game.winners) {
    turn.textContent = t("turn.over");
  } else if (game.legal_actions) {
    turn.textContent = t(`turn.${game.legal_actions.type}`);
  } else if (game.to_act?.length) {
    turn.textContent = t("turn.waiting", { who: game.to_act.map((s) => shortName(table, s)).join(", ") });
  } else {
    turn.textContent = "";
  }
  turn.dataset.mine = game?.legal_actions ? "true" : "false";
  tick();
}

function tick() {
  const table = ui.table;
  const line = $("clock-line");
  if (!table?.deadline || ui.finished) {
    line.textContent = "";
    return;
  }
  const left = Math.max(0, Math.ceil((Date.parse(table.deadline) - Date.now()) / 1000));
  if (table.status === "open") {
    line.textContent = ""; // a quick-play table's deadline: the end of the wait for people
    $("wait-note").textContent = t("wait.quick", { s: left });
    return;
  }
  line.textContent = t(table.game?.legal_actions ? "clock.yours" : "clock.theirs", { s: left });
  line.dataset.urgent = left <= 5 ? "true" : "false";
}

// -- your move at N tables: GET me/turns, read again when the player's stream says a table changed --

const TURNS_QUIET_MS = 1000; // at most one read a second, however fast the bots play
const TURNS_READ_MS = 120000; // and one every two minutes anyway, should a wake-up go missing
const TURNS_RETRY_MS = 5000; // a player stream that could not open is tried again after this
const turns = {
  list: [], // the last answer's turns, soonest deadline first
  more: false, // more than it lists
  source: null, // the player's stream...
  token: null, // ...of this token
  reading: null, // a read under way
  again: false, // read again after it
  timer: null, // a read waiting for its quiet second
  last: 0, // when the last read began
};

// What a turn owes, in the page's words (keys written out: tests/e2e/test_web_i18n.py reads them).
const OWED = {
  pass: () => t("turns.action.pass"),
  play: () => t("turns.action.play"),
  moon: () => t("turns.action.moon"),
};

/** How long a turn has left, in the page's language: minutes under an hour, hours under two days. */
function timeLeft(deadline) {
  if (!deadline) return t("turns.noClock");
  const seconds = (Date.parse(deadline) - Date.now()) / 1000;
  if (seconds <= 0) return t("turns.late");
  if (seconds < 3600) return tp("turns.minutes", Math.ceil(seconds / 60));
  if (seconds < 2 * 86400) return tp("turns.hours", Math.floor(seconds / 3600));
  return tp("turns.days", Math.floor(seconds / 86400));
}

function renderTurns() {
  const box = $("turns");
  const n = turns.list.length;
  box.hidden = n === 0;
  box.dataset.count = String(n);
  $("turns-title").textContent = tp("turns.count", n, turns.more ? { n: `${n}+` } : {});
  const items = turns.list.map((turn) => {
    const when = timeLeft(turn.deadline);
    const action = OWED[turn.action]?.() ?? turn.action;
    const link = el("a", { href: `?table=${turn.table}`, "data-table": turn.table });
    link.textContent = t("turns.item", { table: turn.table, action, when });
    link.addEventListener("click", (event) => {
      event.preventDefault();
      open(turn.table);
    });
    const soon = turn.deadline && Date.parse(turn.deadline) - Date.now() < 3600 * 1000;
    return el("li", { "data-urgent": soon ? "true" : "false" }, link);
  });
  $("turns-list").replaceChildren(...items);
}

/** Read the list again (once, however many asked meanwhile; at most once a second). */
function readTurns() {
  if (!ui.token) return;
  if (turns.reading || turns.timer) {
    turns.again = true;
    return;
  }
  const wait = turns.last + TURNS_QUIET_MS - Date.now();
  if (wait > 0) {
    turns.timer = setTimeout(() => {
      turns.timer = null;
      readTurns();
    }, wait);
    return;
  }
  turns.reading = (async () => {
    turns.last = Date.now();
    try {
      const answer = await api("GET", "/me/turns");
      turns.list = answer.turns;
      turns.more = answer.more;
    } catch (err) {
      if (err.status === 401 || err.status === 422) turns.list = []; // no player behind the token
    }
    renderTurns();
    turns.reading = null;
    if (turns.again) {
      turns.again = false;
      readTurns();
    }
  })();
}

/** The player's own stream (every table they sit at): any event there may change whose move it is. */
async function followTurns() {
  if (!ui.token || turns.source) return;
  const token = ui.token;
  let url;
  try {
    ({ url } = await api("POST", "/me/stream-tickets", {}));
  } catch (err) {
    if (err.status === 401 || err.status === 422) return; // not a player's token: no turns to follow
    setTimeout(() => ui.token === token && followTurns(), TURNS_RETRY_MS); // the list is still read
    return;
  }
  if (ui.token !== token || turns.source) return;
  const source = new EventSource(url);
  turns.source = source;
  turns.token = token;
  for (const type of EVENT_TYPES) source.addEventListener(type, readTurns);
  source.onmessage = readTurns;
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) return; // EventSource tries again by itself
    if (turns.source === source) turns.source = null;
    setTimeout(() => ui.token === token && followTurns(), TURNS_RETRY_MS); // a new ticket
  };
}

/** Follow the turns of the player the page now plays as (a new guest: the new one's). */
function startTurns() {
  if (turns.source && turns.token !== ui.token) {
    turns.source.close();
    turns.source = null;
  }
  followTurns();
  readTurns();
}

// -- notifications: Web Push through the service worker sw.js --------------------------------

// Push needs a service worker, the Push API and notifications, and a secure context (HTTPS or
// localhost: elsewhere the browser has no navigator.serviceWorker).
const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
// One push task at a time (a click, or a sync at a visit, a new guest or a new language), in order.
let pushQueue = Promise.resolve();
let pushBusy = 0;

function pushTask(task) {
  pushBusy += 1;
  renderPush();
  const run = pushQueue.then(task).finally(() => {
    pushBusy -= 1;
    renderPush();
  });
  pushQueue = run.catch(() => {});
  return run;
}

function renderPush() {
  const on = Boolean(localStorage.getItem(KEY.push));
  $("push").hidden = !pushSupported();
  $("push").dataset.state = on ? "on" : "off";
  $("push-on").hidden = on;
  $("push-state").hidden = !on;
  $("push-off").hidden = !on;
  $("push-on").disabled = $("push-off").disabled = pushBusy > 0;
}

/** A VAPID public key (unpadded base64url, as the service serves it) as applicationServerKey bytes. */
function keyBytes(base64url) {
  const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
}

const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The device's name in the player's list of devices: the browser and the system ("Chrome · Android"). */
function browserLabel() {
  const ua = navigator.userAgent;
  const pick = (pairs) => pairs.find(([mark]) => ua.includes(mark))?.[1];
  const browser =
    pick([["Edg/", "Edge"], ["OPR/", "Opera"], ["Firefox/", "Firefox"], ["Chrome/", "Chrome"], ["Safari/", "Safari"]]) ||
    "Browser";
  const system = pick([
    ["Android", "Android"],
    ["iPhone", "iOS"],
    ["iPad", "iPadOS"],
    ["Windows", "Windows"],
    ["Mac OS X", "macOS"],
    ["CrOS", "ChromeOS"],
    ["Linux", "Linux"],
  ]);
  return (system ? `${browser} · ${system}` : browser).slice(0, 64);
}

/** Register the browser's subscription as a device of the player the page plays as, in the page's
 * language (Accept-Language: their notifications' language, unless they chose one). Registering the
 * same subscription again is the same device, moved to this player if another guest had it. */
async function registerDevice(subscription) {
  const { endpoint, keys } = subscription.toJSON();
  const body = { kind: "webpush", token: endpoint, keys, label: browserLabel() };
  const device = await api("POST", "/me/devices", body);
  localStorage.setItem(KEY.push, String(device.id));
  return device;
}

/** Remove a device at the service; one that is gone already (pruned, or another guest's) is fine. */
async function forgetDevice(id) {
  try {
    await api("DELETE", `/me/devices/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err.status !== 404) throw err;
  }
}

/** "Tell me when it is my turn": permission, the service worker, a subscription to the service's
 * VAPID key, and the subscription registered as a device. Refused or failed: nothing is registered. */
function pushOn() {
  if (pushBusy) return;
  const permission = Notification.requestPermission(); // at once, while the click counts as a gesture
  pushTask(async () => {
    if ((await permission) !== "granted") {
      say(t("push.denied"), "warn");
      return;
    }
    let subscription = null;
    let registered = false;
    try {
      await (ui.token ? ensureToken() : ensureGuest(playerName()));
      showWho();
      await navigator.serviceWorker.register("sw.js"); // at /play/sw.js: its scope is /play/
      const registration = await navigator.serviceWorker.ready; // subscribing needs an active worker
      const { public_key: key } = await api("GET", "/push/vapid-key");
      const serverKey = keyBytes(key);
      const old = await registration.pushManager.getSubscription();
      const oldKey = old?.options?.applicationServerKey;
      if (old && !(oldKey && sameBytes(new Uint8Array(oldKey), serverKey))) await old.unsubscribe(); // another key's
      subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: serverKey });
      await registerDevice(subscription);
      registered = true;
      say(t("push.done"));
    } catch (err) {
      if (err instanceof ApiError) showError(err);
      else say(t("push.failed", { reason: err.message || String(err) }), "error");
    } finally {
      if (subscription && !registered) await subscription.unsubscribe().catch(() => false); // nothing half set up
    }
  });
}

/** "Turn off": the device removed at the service, and the browser's subscription ended. */
function pushOff() {
  if (pushBusy) return;
  pushTask(async () => {
    try {
      const id = localStorage.getItem(KEY.push);
      if (id) await forgetDevice(id);
      const registration = await navigator.serviceWorker.getRegistration();
      await (await registration?.pushManager.getSubscription())?.unsubscribe();
      localStorage.removeItem(KEY.push);
      say(t("push.stopped"));
    } catch (err) {
      showError(err);
    }
  });
}

/** Notifications stay with the player the page plays as and its language: on each visit, after a
 * new guest and after a language change, the browser's subscription is registered again (the same
 * device, moved or updated; a new one after the browser renewed its subscription). Permission
 * withdrawn in the browser's settings turns them off here and at the service too. */
function syncPush() {
  if (!localStorage.getItem(KEY.push) || !ui.token || !pushSupported()) return;
  pushTask(async () => {
    const id = localStorage.getItem(KEY.push);
    if (!id || !ui.token) return; // turned off meanwhile
    try {
      const registration = await navigator.serviceWorker.getRegistration();
      const subscription = await registration?.pushManager.getSubscription();
      if (subscription && Notification.permission === "granted") {
        const device = await registerDevice(subscription);
        if (String(device.id) !== id) await forgetDevice(id); // the old subscription's
      } else {
        localStorage.removeItem(KEY.push);
        await forgetDevice(id);
      }
    } catch (err) {
      if (err.status !== 401) showError(err); // a stale token: the page's new guest syncs again
    }
  });
}

/** A click on a notification while a tab of the game is open: sw.js asks that tab to open the table. */
function onWorkerMessage(event) {
  const table = Number(event.data?.table);
  if (event.data?.type !== "open-table" || !Number.isInteger(table) || table <= 0) return;
  if (ui.tableId === table) return;
  ensureToken()
    .then(() => open(table))
    .catch(showError);
}

// -- actions -----------------------------------------------------------------------------

function toggle(card) {
  if (ui.selected.has(card)) ui.selected.delete(card);
  else if (ui.selected.size < (ui.table?.game?.legal_actions?.count || 3)) ui.selected.add(card);
  renderHand(ui.table);
  renderPass(ui.table);
}

function act(action) {
  if (ui.busy || !ui.table) return;
  ui.acting = submit(action).finally(() => {
    ui.acting = null;
  });
}

async function submit(action) {
  ui.busy = true;
  render(ui.table);
  try {
    const body = { ...action, expected_version: ui.table.version };
    const table = await write(`/tables/${ui.tableId}/actions`, body);
    if (action.type === "pass") ui.selected.clear();
    say("");
    ui.busy = false;
    render(table);
  } catch (err) {
    ui.busy = false;
    render(ui.table);
    showError(err);
    scheduleRefresh(); // stale or refused: show the table as it is now
  }
}

async function askRematch() {
  $("rematch").disabled = true;
  try {
    render(await write(`/tables/${ui.tableId}/rematch`));
    say("");
  } catch (err) {
    showError(err);
  } finally {
    $("rematch").disabled = false;
  }
}

/** The lobby's choices as a table's options, bots and clocks. */
function choices() {
  const clock = $("clock").value;
  const seconds = clock === "none" ? null : Number(clock);
  return {
    level: $("level").value,
    options: { target_score: Number($("target").value) },
    hints: $("hints").checked,
    clocks: { pass: seconds && seconds * 2, play: seconds, moon: seconds },
  };
}

const playerName = () => $("name").value.trim() || localStorage.getItem(KEY.name) || t("guest");

async function quickPlay() {
  $("quick-play").disabled = true;
  say(t("status.joining"));
  try {
    await ensureGuest(playerName());
    const { level, options, clocks } = choices();
    const table = await write("/quick-play", { options, clocks, bot_level: level, wait_seconds: 20 });
    say("");
    open(table.id);
  } catch (err) {
    if (err.code === "already_waiting" && err.body.table) open(err.body.table); // back to where you wait
    else showError(err);
  } finally {
    $("quick-play").disabled = false;
  }
}

async function stopWaiting() {
  try {
    await api("DELETE", "/quick-play");
    ui.finished = true; // nothing to come back to
    leave();
  } catch (err) {
    showError(err);
  }
}

async function makeInvite() {
  try {
    const invite = await write(`/tables/${ui.tableId}/invites`);
    const link = new URL(window.location.href);
    link.search = "";
    link.searchParams.set("invite", invite.code);
    $("invite-link").value = link.href;
    $("invite-out").hidden = false;
    $("invite-link").focus();
    $("invite-link").select();
  } catch (err) {
    showError(err);
  }
}

async function startNow() {
  try {
    const body = { fill_with: $("level").value, expected_version: ui.table.version };
    render(await write(`/tables/${ui.tableId}/start`, body));
  } catch (err) {
    showError(err);
  }
}

async function joinByInvite(event) {
  event?.preventDefault();
  const code = $("invite-code").value.trim();
  if (!code) return;
  $("invite-join").disabled = true;
  say(t("status.joining"));
  try {
    await ensureGuest(playerName());
    const table = await write(`/invites/${encodeURIComponent(code)}/join`);
    say("");
    open(table.id);
  } catch (err) {
    showError(err);
  } finally {
    $("invite-join").disabled = false;
  }
}

async function ensureGuest(name) {
  if (ui.token && localStorage.getItem(KEY.name) === name) {
    try {
      await api("GET", "/me");
      startTurns();
      return;
    } catch (err) {
      if (err.status !== 401) throw err;
      ui.token = null; // revoked or from another database: get a new one
    }
  }
  const guest = await api("POST", "/guests", { name });
  ui.token = guest.token;
  localStorage.setItem(KEY.token, guest.token);
  localStorage.setItem(KEY.name, name);
  startTurns();
  syncPush(); // this browser's notifications go to the new guest
}

/** Any working token: a visitor who opens a table by its address gets a guest of their own. */
async function ensureToken() {
  const name = localStorage.getItem(KEY.name) || t("guest");
  if (ui.token) {
    try {
      await api("GET", "/me");
      startTurns();
      return;
    } catch (err) {
      if (err.status !== 401) throw err;
      ui.token = null;
    }
  }
  await ensureGuest(name);
}

async function createGame(event) {
  event.preventDefault();
  const { level, options, clocks, hints } = choices();
  const friends = Number($("friends").value);
  $("create").disabled = true;
  say(t("status.creating"));
  try {
    await ensureGuest(playerName());
    // You sit at seat 0, the friends you invite take the next seats, bots the rest.
    const bots = Object.fromEntries([1, 2, 3].filter((s) => s > friends).map((s) => [String(s), level]));
    const body = { options, bots, clocks };
    if (hints) body.hints = true; // off unless asked: a bot may suggest moves at this table
    if (friends) body.visibility = "private"; // only the invited find it
    const created = await write("/tables", body);
    await write(`/tables/${created.id}/join`, { expected_version: created.version, position: 0 });
    say("");
    open(created.id);
  } catch (err) {
    showError(err);
  } finally {
    $("create").disabled = false;
  }
}

function open(tableId) {
  stopFeed();
  ui.tableId = tableId;
  ui.table = null;
  ui.lastEventId = null;
  ui.finished = false;
  ui.movingTo = null;
  ui.records.clear();
  ui.selected.clear();
  ui.hint = null;
  ui.reviews.clear();
  ui.reviewShown = null;
  $("review-out").replaceChildren();
  setReview(false);
  resetTrick();
  localStorage.setItem(KEY.table, String(tableId));
  const address = new URL(window.location.href);
  address.searchParams.set("table", tableId);
  window.history.replaceState(null, "", address); // the address opens this table again
  $("log").replaceChildren();
  ui.logged = [];
  $("chart").replaceChildren();
  delete $("chart").dataset.hands;
  $("lobby").hidden = true;
  $("resume-line").hidden = true;
  $("table").hidden = false;
  showWho();
  follow(tableId);
}

function leave() {
  stopFeed();
  const left = ui.finished ? null : ui.tableId; // a game still going can be taken up again
  const seated = ui.table?.your_seat !== null && ui.table?.your_seat !== undefined;
  ui.tableId = null;
  ui.table = null;
  resetTrick();
  if (!left || !seated) localStorage.removeItem(KEY.table);
  const address = new URL(window.location.href);
  address.searchParams.delete("table");
  window.history.replaceState(null, "", address);
  $("table").hidden = true;
  $("lobby").hidden = false;
  $("app").dataset.phase = "lobby";
  offerResume(seated ? left : null);
}

function offerResume(tableId) {
  $("resume-id").textContent = tableId || "";
  $("resume-line").hidden = !tableId;
}

function showWho() {
  const name = localStorage.getItem(KEY.name);
  $("whoami").textContent = ui.token && name ? t("whoami", { name }) : "";
}

function showRules() {
  const box = $("rules-text");
  box.replaceChildren();
  for (const part of ["deal", "passing", "follow", "hearts", "points", "moon", "end"]) {
    box.append(el("h4", { text: t(`rules.${part}.title`) }), el("p", { text: t(`rules.${part}`) }));
  }
}

async function changeLanguage(code) {
  await setLanguage(code);
  $("lang").value = code;
  showRules();
  showWho();
  rerender();
  retellLog();
  renderTurns();
  syncPush(); // notifications in the new language
}

async function start() {
  const lang = preferredLanguage();
  await setLanguage(lang);
  $("lang").value = lang;
  showRules();
  $("lang").addEventListener("change", () => changeLanguage($("lang").value).catch(showError));
  if (!$("name").value) $("name").value = localStorage.getItem(KEY.name) || "";
  showWho();
  $("new-game").addEventListener("submit", createGame);
  $("quick-play").addEventListener("click", quickPlay);
  $("quick-cancel").addEventListener("click", stopWaiting);
  $("invite").addEventListener("click", makeInvite);
  $("start-now").addEventListener("click", startNow);
  $("invite-form").addEventListener("submit", joinByInvite);
  $("hint").addEventListener("click", askHint);
  $("review-form").addEventListener("submit", askReview);
  $("pass").addEventListener("click", () => act({ type: "pass", cards: [...ui.selected] }));
  for (const button of document.querySelectorAll("[data-moon]")) {
    button.addEventListener("click", () => act({ type: "moon", choice: button.dataset.moon }));
  }
  $("hand").addEventListener("keydown", moveFocus);
  $("leave").addEventListener("click", leave);
  $("last-trick").addEventListener("click", () => setReview(!ui.review));
  $("rematch").addEventListener("click", askRematch);
  $("rematch-open").addEventListener("click", () => ui.table?.rematch?.table && open(ui.table.rematch.table));
  $("resume").addEventListener("click", () => open(Number($("resume-id").textContent)));
  $("back").addEventListener("click", async () => {
    try {
      render(await write(`/tables/${ui.tableId}/back`));
    } catch (err) {
      showError(err);
    }
  });
  setInterval(tick, 250);
  setInterval(renderTurns, 30000); // "45 minutes left" ages
  setInterval(readTurns, TURNS_READ_MS);
  if (ui.token) startTurns(); // the list of a player who came back
  $("push-on").addEventListener("click", pushOn);
  $("push-off").addEventListener("click", pushOff);
  if (pushSupported()) navigator.serviceWorker.addEventListener("message", onWorkerMessage);
  renderPush();
  syncPush();
  $("app").dataset.ready = "true"; // every control answers from now on
  // /play/?invite=<code>: the lobby, ready to join with the code under the name you give.
  const query = new URLSearchParams(window.location.search);
  if (query.get("invite")) {
    $("invite-code").value = query.get("invite");
    const address = new URL(window.location.href);
    address.searchParams.delete("invite");
    window.history.replaceState(null, "", address);
    ($("name").value ? $("invite-join") : $("name")).focus();
    return;
  }
  // /play/?table=12 opens that table: your seat if you have one there, else as a spectator.
  const asked = Number(query.get("table"));
  if (asked) {
    try {
      await ensureToken();
      open(asked);
    } catch (err) {
      showError(err);
    }
    return;
  }
  // Back to the table of the last visit, if it is still going.
  const saved = Number(localStorage.getItem(KEY.table));
  if (ui.token && saved) {
    try {
      const table = await api("GET", `/tables/${saved}`);
      if (table.your_seat !== null && !["finished", "abandoned"].includes(table.status)) offerResume(table.id);
    } catch {
      localStorage.removeItem(KEY.table);
    }
  }
}

export { LANGUAGES };
start();
