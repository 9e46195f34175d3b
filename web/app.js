// The reference web client: a person plays Hearts against three bots through the public REST API
// (/api/v1/) and the table's event stream (NDJSON read with fetch(), since EventSource cannot send
// the Authorization header). Plain ES module, no build step, no dependencies.

const API = "/api/v1";
const KEY = { token: "hearts.token", name: "hearts.name", table: "hearts.table" };

const SUITS = { C: "clubs", D: "diamonds", S: "spades", H: "hearts" };
const SUIT_SIGN = { C: "♣", D: "♦", S: "♠", H: "♥" };
const SUIT_ORDER = "CDSH"; // alternating colours
const RANKS = "23456789TJQKA";
const RANK_NAMES = {
  T: "10", J: "Jack", Q: "Queen", K: "King", A: "Ace",
};
const COMPASS = ["South", "West", "North", "East"]; // from your seat, in playing order

const $ = (id) => document.getElementById(id);

const ui = {
  token: localStorage.getItem(KEY.token),
  tableId: null, // the table followed
  table: null, // its last REST body
  lastEventId: null, // the stream position, to resume after a drop
  stream: null, // AbortController of the open stream
  selected: new Set(), // cards chosen to pass
  busy: false, // an action is on its way
  acting: null, // ...and its promise
  finished: false,
};

// -- cards -------------------------------------------------------------------------------

function parseCard(card) {
  const c = card.toUpperCase();
  const rank = c.length === 3 ? "T" : c[0]; // "10H" is also accepted by the service
  return { rank, suit: c[c.length - 1] };
}

export function cardName(card) {
  const { rank, suit } = parseCard(card);
  return `${RANK_NAMES[rank] || rank} of ${SUITS[suit]}`;
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

function cardFace(card) {
  const { suit } = parseCard(card);
  const span = document.createElement("span");
  span.className = `face suit-${suit}`;
  span.textContent = cardLabel(card);
  return span;
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
  const headers = { Accept: "application/json", ...extraHeaders };
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

function showError(err) {
  say(err instanceof ApiError ? err.message : `error: ${err.message || err}`, "error");
}

// -- seats -------------------------------------------------------------------------------

function seatName(table, position) {
  const seat = table.seats[position];
  const mine = table.your_seat;
  const n = table.seats.length;
  const where = mine === null ? `Seat ${position + 1}` : n === 4 ? COMPASS[(position - mine + n) % n] : `Seat ${position + 1}`;
  if (position === mine) return `You (${seat.name || "you"})`;
  if (seat.bot) return `${where} (${seat.bot} bot)`;
  return seat.name ? `${where} (${seat.name})` : where;
}

function shortName(table, position) {
  return position === table.your_seat ? "You" : seatName(table, position).split(" (")[0];
}

// -- the stream --------------------------------------------------------------------------

async function follow(tableId) {
  ui.stream?.abort();
  const controller = new AbortController();
  ui.stream = controller;
  let delay = 500;
  let dropped = false;
  while (!controller.signal.aborted && ui.tableId === tableId && !ui.finished) {
    try {
      const query = ui.lastEventId ? `&last_event_id=${encodeURIComponent(ui.lastEventId)}` : "";
      const response = await fetch(`${API}/tables/${tableId}/stream?format=ndjson${query}`, {
        headers: { Authorization: `Bearer ${ui.token}`, Accept: "application/x-ndjson" },
        signal: controller.signal,
      });
      if (response.status === 204) {
        ui.finished = true; // the table is over and nothing is left to read
        scheduleRefresh();
        return;
      }
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new ApiError(response.status, body);
      }
      delay = 500;
      if (dropped) say(""); // back after a drop: nothing was missed
      dropped = false;
      await readLines(response.body, controller.signal);
    } catch (err) {
      if (controller.signal.aborted) return;
      if (err instanceof ApiError && [400, 401, 404].includes(err.status)) {
        showError(err);
        if (err.code === "invalid_last_event_id") ui.lastEventId = null; // start afresh
        else return;
      }
    }
    if (controller.signal.aborted || ui.finished) return;
    dropped = true;
    say("Connection lost: reconnecting…", "warn");
    await sleep(delay); // the stream dropped: resume after the last event received
    delay = Math.min(delay * 2, 8000);
  }
}

async function readLines(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || signal.aborted) return;
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) onEvent(JSON.parse(line));
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function onEvent(event) {
  if (event.type === "keepalive") return;
  if (event.id) ui.lastEventId = event.id;
  if (event.type === "state") {
    render(event.state);
  } else {
    logEvent(event);
    if (event.type === "table_finished") ui.finished = true;
  }
  if (event.type !== "state") scheduleRefresh();
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

function describe(event, table) {
  const who = (seat) => shortName(table, seat);
  switch (event.type) {
    case "hand_started":
      return `Hand ${event.hand} dealt; pass ${event.pass_direction}.`;
    case "pass_submitted":
      return event.seat === table.your_seat ? null : `${who(event.seat)} passed.`;
    case "cards_passed":
      return `You passed ${event.cards.map(cardLabel).join(" ")} to ${who(event.to)}.`;
    case "cards_received":
      return `You received ${event.cards.map(cardLabel).join(" ")} from ${who(event.from)}.`;
    case "passes_complete":
      return "Every seat has passed: play begins.";
    case "card_played":
      return `${who(event.seat)} played ${cardLabel(event.card)}.`;
    case "hearts_broken":
      return "Hearts are broken.";
    case "trick_won":
      return `${who(event.seat)} won trick ${event.trick} (${event.points} point${event.points === 1 ? "" : "s"}).`;
    case "moon_shot":
      return `${who(event.seat)} shot the moon!`;
    case "moon_chosen":
      return `${who(event.seat)} chose to ${event.choice}.`;
    case "hand_scored":
      return `Hand ${event.hand} scored: ${event.points.map((p, i) => `${who(i)} ${p}`).join(", ")}.`;
    case "turn_timed_out":
      return `${who(event.seat)} ran out of time: the server acted for them.`;
    case "seat_away":
      return `${who(event.seat)} is away: a bot plays for them.`;
    case "seat_back":
      return `${who(event.seat)} is back.`;
    case "game_over":
      return `Game over: ${event.winners.map(who).join(" and ")} won.`;
    case "table_abandoned":
      return "The table was closed.";
    default:
      return null;
  }
}

function logEvent(event) {
  if (!ui.table) return;
  const text = describe(event, ui.table);
  if (!text) return;
  const log = $("log");
  log.prepend(el("li", { text, "data-type": event.type }));
  while (log.children.length > 300) log.lastChild.remove();
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
  const legal = game?.legal_actions || null;
  app.dataset.myTurn = legal ? legal.type : "";
  $("table-id").textContent = table.id;
  $("hand-number").textContent = game ? game.hand_number : "–";
  if (table.status === "finished" || table.status === "abandoned") ui.finished = true;
  renderSeats(table);
  renderTrick(table);
  renderHand(table);
  renderPass(table);
  $("moon-panel").hidden = legal?.type !== "moon";
  renderTricks(table);
  renderSheet(table);
  renderTurn(table);
  const me = table.seats[table.your_seat];
  $("back").hidden = !me?.away;
}

function renderSeats(table) {
  const game = table.game;
  const list = $("seats");
  list.replaceChildren();
  table.seats.forEach((seat, i) => {
    const acting = game?.to_act?.includes(i);
    const item = el(
      "li",
      { class: `seat${i === table.your_seat ? " mine" : ""}${acting ? " acting" : ""}`, "data-seat": i },
      el("strong", { text: seatName(table, i) }),
    );
    if (game) {
      item.append(
        el("span", { class: "muted", text: ` · this hand ${game.points_taken[i]} · score ${game.scores[i]}` }),
      );
      if (game.phase === "passing" && game.passed) item.append(el("span", { text: game.passed[i] ? " · passed" : "" }));
    }
    if (seat.away) item.append(el("span", { class: "away", text: " · away" }));
    list.append(item);
  });
}

function renderTrick(table) {
  const game = table.game;
  const trick = $("trick");
  const note = $("trick-note");
  trick.replaceChildren();
  note.textContent = "";
  if (!game) return;
  let cards = game.trick;
  if (!cards.length && game.tricks.length) {
    const last = game.tricks[game.tricks.length - 1]; // the trick just taken stays in view
    cards = last.cards;
    note.textContent = `${shortName(table, last.winner)} won trick ${game.tricks.length} (${last.points} point${last.points === 1 ? "" : "s"}).`;
  } else if (!cards.length) {
    note.textContent = game.phase === "passing" ? "Passing…" : "No card played yet.";
  }
  for (const { seat, card } of cards) {
    trick.append(
      el(
        "li",
        { class: "played", "data-seat": seat, "data-played": card, "aria-label": `${shortName(table, seat)}: ${cardName(card)}` },
        el("span", { class: "who", text: shortName(table, seat) }),
        cardFace(card),
      ),
    );
  }
}

function renderHand(table) {
  const game = table.game;
  const hand = $("hand");
  hand.replaceChildren();
  if (!game || !game.hand) return;
  const legal = game.legal_actions;
  const playable = legal?.type === "play" ? new Set(legal.cards) : null;
  const passing = legal?.type === "pass";
  const received = new Set(game.received?.cards || []);
  for (const card of [...ui.selected]) if (!passing || !game.hand.includes(card)) ui.selected.delete(card);
  for (const card of sortHand(game.hand)) {
    const button = el("button", {
      type: "button",
      class: `card${received.has(card) ? " received" : ""}`,
      "data-card": card,
      "aria-label": cardName(card) + (received.has(card) ? " (received)" : ""),
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
  }
  const got = game.received;
  $("received-note").textContent = got ? `· received ${got.cards.map(cardLabel).join(" ")} from ${shortName(table, got.from)}` : "";
}

function renderPass(table) {
  const game = table.game;
  const panel = $("pass-panel");
  const show = game?.phase === "passing";
  panel.hidden = !show;
  if (!show) return;
  const legal = game.legal_actions;
  const n = table.seats.length;
  const offset = { left: 1, right: n - 1, across: 2 }[game.pass_direction];
  const to = offset === undefined ? null : (table.your_seat + offset) % n;
  const target = to === null ? "" : ` to ${shortName(table, to)}`;
  if (legal?.type === "pass") {
    const count = legal.count;
    $("pass-direction").textContent = `Choose ${count} cards to pass ${game.pass_direction}${target} (${ui.selected.size} chosen).`;
    $("pass").disabled = ui.busy || ui.selected.size !== count;
    $("pass").hidden = false;
  } else {
    const mine = game.my_pass?.cards || [];
    $("pass-direction").textContent = mine.length
      ? `You passed ${mine.map(cardLabel).join(" ")} ${game.pass_direction}${target}; waiting for the others.`
      : "Waiting for the others to pass.";
    $("pass").hidden = true;
  }
  panel.dataset.direction = game.pass_direction;
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
      part.append(`${shortName(table, seat)} `, cardFace(card), " ");
      item.append(part);
    }
    item.append(
      el("strong", { text: `→ ${shortName(table, trick.winner)}${trick.points ? ` (${trick.points})` : ""}` }),
    );
    list.append(item);
  });
}

function renderSheet(table) {
  const game = table.game;
  const head = $("sheet-head");
  head.replaceChildren(el("th", { scope: "col", text: "Hand" }));
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
  if (game) {
    now.append(el("th", { scope: "row", text: "This hand" }));
    game.points_taken.forEach((p, i) => now.append(el("td", { "data-seat": i, text: String(p) })));
  }
  const over = $("game-over");
  over.hidden = !(game?.winners || table.status === "abandoned");
  if (game?.winners) over.textContent = `Game over: ${game.winners.map((w) => shortName(table, w)).join(" and ")} won.`;
  else if (table.status === "abandoned") over.textContent = "The table was closed.";
}

// -- whose turn and the clock ------------------------------------------------------------

function renderTurn(table) {
  const game = table.game;
  const turn = $("turn");
  if (!game) {
    turn.textContent = `Table ${table.status}.`;
  } else if (game.winners) {
    turn.textContent = "The game is over.";
  } else if (game.legal_actions) {
    turn.textContent = {
      pass: "Your turn: choose your pass.",
      play: "Your turn: play a card.",
      moon: "Your turn: choose how your moon scores.",
    }[game.legal_actions.type];
  } else if (game.to_act?.length) {
    const names = game.to_act.map((s) => shortName(table, s)).join(", ");
    turn.textContent = `Waiting for ${names}.`;
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
  const whose = table.game?.legal_actions ? "your" : "their";
  line.textContent = `Clock: ${left} s left on ${whose} turn`;
  line.dataset.urgent = left <= 5 ? "true" : "false";
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
    const table = await api("POST", `/tables/${ui.tableId}/actions`, body, { "Idempotency-Key": idempotencyKey() });
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

async function ensureGuest(name) {
  if (ui.token && localStorage.getItem(KEY.name) === name) {
    try {
      await api("GET", "/tables?mine=true");
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
}

async function createGame(event) {
  event.preventDefault();
  const name = $("name").value.trim() || "Guest";
  const level = $("level").value;
  const clock = $("clock").value;
  const seconds = clock === "none" ? null : Number(clock);
  $("create").disabled = true;
  say("Creating a table…");
  try {
    await ensureGuest(name);
    const bots = Object.fromEntries([1, 2, 3].map((s) => [String(s), level]));
    const clocks = { pass: seconds && seconds * 2, play: seconds, moon: seconds };
    const options = { target_score: Number($("target").value) };
    const created = await api("POST", "/tables", { options, bots, clocks }, { "Idempotency-Key": idempotencyKey() });
    await api("POST", `/tables/${created.id}/join`, { expected_version: created.version }, { "Idempotency-Key": idempotencyKey() });
    say("");
    open(created.id);
  } catch (err) {
    showError(err);
  } finally {
    $("create").disabled = false;
  }
}

function open(tableId) {
  ui.tableId = tableId;
  ui.table = null;
  ui.lastEventId = null;
  ui.finished = false;
  ui.selected.clear();
  localStorage.setItem(KEY.table, String(tableId));
  $("log").replaceChildren();
  $("lobby").hidden = true;
  $("resume-line").hidden = true;
  $("table").hidden = false;
  $("whoami").textContent = `Playing as ${localStorage.getItem(KEY.name) || "guest"}`;
  follow(tableId);
}

function leave() {
  ui.stream?.abort();
  const left = ui.finished ? null : ui.tableId; // a game still going can be taken up again
  ui.tableId = null;
  ui.table = null;
  if (!left) localStorage.removeItem(KEY.table);
  $("table").hidden = true;
  $("lobby").hidden = false;
  $("app").dataset.phase = "lobby";
  offerResume(left);
}

function offerResume(tableId) {
  $("resume-id").textContent = tableId || "";
  $("resume-line").hidden = !tableId;
}

async function start() {
  $("name").value = localStorage.getItem(KEY.name) || "";
  if (ui.token && $("name").value) $("whoami").textContent = `Playing as ${$("name").value}`;
  $("new-game").addEventListener("submit", createGame);
  $("pass").addEventListener("click", () => act({ type: "pass", cards: [...ui.selected] }));
  for (const button of document.querySelectorAll("[data-moon]")) {
    button.addEventListener("click", () => act({ type: "moon", choice: button.dataset.moon }));
  }
  $("leave").addEventListener("click", leave);
  $("resume").addEventListener("click", () => open(Number($("resume-id").textContent)));
  $("back").addEventListener("click", async () => {
    try {
      render(await api("POST", `/tables/${ui.tableId}/back`, {}, { "Idempotency-Key": idempotencyKey() }));
    } catch (err) {
      showError(err);
    }
  });
  setInterval(tick, 250);
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

start();
