// What the page does with each event the service can send: one entry per type of the contract
// (event-types.js, generated from the service's OpenAPI document). tests/e2e/test_web_events.py
// fails when the service can send a type that has no entry here, and runs every entry on the
// contract's example of its type, in every language of the page.
//
// An entry has at least one of:
// - log(event, view): the line the event log shows, in the page's language, or null for nothing
//   this time. `view` gives the page's words and names: view.t and view.tp (i18n.js), view.who(seat)
//   (You, West, Seat 3...), view.card(card), view.cards(cards), view.level(level), view.number(x),
//   view.mine(seat) (whether the seat is yours);
// - shown: the id of the part of the page that shows the event, for a type told there and not in
//   the log (the table's REST body, read after the event, has what it says).
// and may have:
// - apply(event, page): what it changes in the page: page.render(table), page.keepRecord(record),
//   page.finish();
// - carriesTable: the event holds the table itself, so the page need not read it again.
//
// No module here touches the page: app.js wires `view` and `page`; a test runs this file under
// Node with stand-ins.

export const HANDLERS = {
  // -- the table's log: GET tables/{id}/events and the streams --------------------------
  game_started: { log: (e, v) => v.t("log.gameStarted") },
  seat_taken: { log: (e, v) => v.t("log.seatTaken", { who: v.who(e.seat), name: e.name }) },
  seat_left: { log: (e, v) => v.t("log.seatLeft", { who: v.who(e.seat) }) },
  bot_added: { log: (e, v) => v.t("log.botAdded", { who: v.who(e.seat), level: v.level(e.level) }) },
  hand_started: {
    log: (e, v) => v.t("log.handStarted", { hand: e.hand, direction: v.t(`dir.${e.pass_direction}`) }),
  },
  cards_dealt: { shown: "hand" }, // your new hand
  pass_submitted: { log: (e, v) => (v.mine(e.seat) ? null : v.t("log.passSubmitted", { who: v.who(e.seat) })) },
  cards_passed: { log: (e, v) => v.t("log.cardsPassed", { cards: v.cards(e.cards), to: v.who(e.to) }) },
  passes_complete: { log: (e, v) => v.t("log.passesComplete") },
  cards_received: { log: (e, v) => v.t("log.cardsReceived", { cards: v.cards(e.cards), from: v.who(e.from) }) },
  card_played: { log: (e, v) => v.t("log.cardPlayed", { who: v.who(e.seat), card: v.card(e.card) }) },
  hearts_broken: { log: (e, v) => v.t("log.heartsBroken") },
  trick_won: { log: (e, v) => v.tp("log.trickWon", e.points, { who: v.who(e.seat), trick: e.trick }) },
  trick_carried: { log: (e, v) => v.t("log.trickCarried", { cards: v.cards(e.cards) }) },
  moon_shot: { log: (e, v) => v.t("log.moonShot", { who: v.who(e.seat) }) },
  moon_chosen: { log: (e, v) => v.t(`log.moonChosen.${e.choice}`, { who: v.who(e.seat) }) },
  hand_scored: {
    log: (e, v) =>
      v.t("log.handScored", { hand: e.hand, points: e.points.map((p, i) => `${v.who(i)} ${p}`).join(", ") }),
  },
  hand_revealed: { shown: "passes", apply: (e, page) => page.keepRecord(e.record) }, // every seat's pass
  game_over: { log: (e, v) => v.t("log.gameOver", { who: e.winners.map(v.who).join(` ${v.t("and")} `) }) },
  table_abandoned: { log: (e, v) => v.t("log.abandoned") },
  table_finished: { shown: "over-panel", apply: (e, page) => page.finish() }, // after game_over or table_abandoned
  ratings_changed: {
    log: (e, v) =>
      v.t("log.ratingsChanged", {
        ratings: e.changes
          .map((c) => v.t("log.rating", { who: v.who(c.seat), mu: v.number(c.mu), sigma: v.number(c.sigma) }))
          .join(", "),
      }),
  },
  bot_fallback: { log: (e, v) => v.t(`log.botFallback.${e.reason}`, { who: v.who(e.seat) }) },
  turn_timed_out: { log: (e, v) => v.t("log.timedOut", { who: v.who(e.seat) }) },
  seat_away: { log: (e, v) => v.t("log.away", { who: v.who(e.seat) }) },
  seat_back: { log: (e, v) => v.t("log.back", { who: v.who(e.seat) }) },
  match_found: {
    log: (e, v) => (e.bots?.length ? v.t("log.matchBots", { who: e.bots.map(v.who).join(", ") }) : v.t("log.matchFound")),
  },
  quick_play_expired: { log: (e, v) => v.t("log.quickExpired") },
  rematch_proposed: { log: (e, v) => v.t("log.rematchProposed", { who: v.who(e.seat) }) },
  rematch_accepted: { log: (e, v) => v.t("log.rematchAccepted", { who: v.who(e.seat) }) },
  rematch_started: { log: (e, v) => v.t("log.rematchStarted", { table: e.new_table }) },
  // Deal sets and rotations count from 0 in the API, from 1 on the page.
  tournament_table: {
    log: (e, v) =>
      v.t("log.tournamentTable", { tournament: e.tournament, deal: e.deal_set + 1, rotation: e.rotation + 1 }),
  },
  tournament_progress: {
    log: (e, v) => {
      const counts = { tournament: e.tournament, done: e.tables_finished, total: e.tables_total };
      return e.status === "finished" ? v.t("log.tournamentFinished", counts) : v.t("log.tournamentProgress", counts);
    },
  },
  tournament_next_table: {
    log: (e, v) => v.t("log.tournamentNext", { tournament: e.tournament, table: e.next_table }),
  },
  // -- built by a stream for its viewer -------------------------------------------------
  state: { shown: "table", carriesTable: true, apply: (e, page) => page.render(e.state) }, // a table stream's first
  tables: {
    // A player stream's first (the page opens table streams): the followed table, if it is there.
    shown: "table",
    carriesTable: true,
    apply: (e, page) => e.tables.forEach(page.render),
  },
  your_turn: { shown: "turn" }, // what you may do, and the clock
};
