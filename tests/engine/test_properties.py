"""Property tests: hypothesis plays whole games of every variant, checking docs/rules.md at every step."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from math import comb
from random import Random
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from games.engine import (
    EngineError,
    MoonChoice,
    Options,
    Pass,
    Play,
    State,
    card_name,
    deal,
    dumps,
    loads,
    new_game,
    parse_card,
    replay,
    state_from_dict,
    state_to_dict,
    view,
    visible_events,
)
from games.engine.cards import names

# CI can raise the number of examples: HYPOTHESIS_PROFILE=ci (x4) or =nightly (x20). The settings
# are per test, so no global hypothesis profile is loaded or changed by this module.
SCALE = {"ci": 4, "nightly": 20}.get(os.environ.get("HYPOTHESIS_PROFILE", ""), 1)


def examples(n: int) -> settings:
    return settings(
        max_examples=n * SCALE,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
        # A whole game is thousands of random choices: shrinking one takes minutes and yields an
        # example no clearer than the original, so a failure is reported as found.
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )


# -- the rules, written down again from docs/rules.md, on card names only -----------------------------

RANKS = "23456789TJQKA"
SUITS = "CDSH"
PACK = [r + s for s in SUITS for r in RANKS]
REMOVED = {3: {"2D"}, 4: set(), 5: {"2D", "2C"}, 6: {"2D", "3D", "3C", "4C"}, 7: {"2D", "3D", "3C"}}
CARDS_EACH = {3: 17, 4: 13, 5: 10, 6: 8, 7: 7}
WIDOW_SIZE = {6: 2, 7: 6, 8: 0, 9: 5, 10: 4}
HAND_POINTS = {"classic": 26, "omnibus": 16, "cancellation": 52}
MOON_VALUE = {"classic": 26, "omnibus": 26, "cancellation": 52}
ILLEGAL_PLAY_CODES = {
    "must_lead_lowest_club",
    "must_follow_suit",
    "no_points_on_first_trick",
    "hearts_not_broken",
}

TABLES = (
    [("classic", n, "JD") for n in range(3, 8)]
    + [("omnibus", n, card) for n in range(3, 8) for card in ("JD", "TD")]
    + [("cancellation", n, "JD") for n in range(6, 11)]
)
# Game seeds: hex of random bytes, or any text. Never all zeros: hypothesis first tries its simplest
# input (seed "000...", every choice the first), which would make the one example a table gets by
# default the same degenerate game on every run; rejecting that seed costs nothing.
SEEDS = st.one_of(
    st.binary(min_size=16, max_size=32).map(bytes.hex), st.text(min_size=16, max_size=40)
).filter(lambda seed: seed.strip("0") != "")


def rank(card: str) -> int:
    return RANKS.index(card[0])


def is_penalty(card: str) -> bool:
    return card[1] == "H" or card == "QS"


def full_deck(options: Options) -> Counter[str]:
    if options.variant == "cancellation":
        return Counter(PACK * 2)
    return Counter(c for c in PACK if c not in REMOVED[options.players])


def winning_index(cards: list[str], cancellation: bool) -> int | None:
    """Index of the winning card: highest of the led suit; with two packs identical cards cancel
    and neither can win (None when every led-suit card is cancelled)."""
    led = cards[0][1]
    counts = Counter(cards)
    best = None
    for i, c in enumerate(cards):
        if c[1] != led or (cancellation and counts[c] > 1):
            continue
        if best is None or rank(c) > rank(cards[best]):
            best = i
    return best


def pass_offset(options: Options, hand: int) -> int:
    if options.variant == "cancellation":
        return 0
    if options.players == 4:
        return {1: 1, 2: 3, 3: 2, 0: 0}[hand % 4]
    return 1 if hand % 2 else options.players - 1


def direction_name(options: Options, offset: int) -> str:
    if offset == 0:
        return "hold"
    if offset == 1:
        return "left"
    if offset == options.players - 1:
        return "right"
    return "across"


def game_end(options: Options, totals: list[int]) -> list[int] | None:
    """The winners when the game ends with these totals after a hand, else None."""
    if max(totals) < options.target_score:
        return None
    low = min(totals)
    winners = [s for s, t in enumerate(totals) if t == low]
    if len(winners) > 1 and options.tie_rule != "shared":
        return None
    return winners


def elements(counter: Counter[str]) -> list[str]:
    return sorted(counter.elements())


def token_of(entry: Any) -> str:
    """A card of a trick as a record or view shows it: a bare token or {"seat": s, "card": token}."""
    return entry if isinstance(entry, str) else entry["card"]


TOKEN = re.compile(r'"([2-9TJQKA][CDSH])"')


def card_tokens(text: str) -> Counter[str]:
    """Every card token anywhere in a JSON text (a string value or key that is exactly a card)."""
    return Counter(TOKEN.findall(text))


def excess(tokens: Counter[str], known: Counter[str]) -> dict[str, int]:
    """The tokens shown more often than the viewer may know of them."""
    return {t: k - known[t] for t, k in tokens.items() if k > known[t]}


def json_fragment(text: str) -> str:
    """How `text` appears inside a JSON document (escaped, without its quotes)."""
    return json.dumps(text)[1:-1]


class Model:
    """An independent model of one game, on card names: the reference the engine is compared with."""

    def __init__(self, options: Options, totals: list[int]) -> None:
        self.o = options
        self.n = options.players
        self.cancel = options.variant == "cancellation"
        self.bonus = options.omnibus_card if options.variant == "omnibus" else None
        self.totals = list(totals)
        self.rows: list[tuple[list[int], dict[str, Any] | None]] = []
        self.finished: list[dict[str, Any]] = []
        self.phase = ""
        self.winners: list[int] = []
        self.moons = 0
        self.corners: set[str] = set()

    # -- a hand ------------------------------------------------------------------------------------
    def start_hand(self, hand_no: int, dealt: list[list[str]], widow: list[str]) -> None:
        o, n = self.o, self.n
        assert Counter(c for h in dealt for c in h) + Counter(widow) == full_deck(o), "wrong cards dealt"
        each = 104 // n if self.cancel else CARDS_EACH[n]
        assert [len(h) for h in dealt] == [each] * n
        assert len(widow) == (WIDOW_SIZE[n] if self.cancel else 0)
        self.hand_no = hand_no
        self.dealer = (hand_no - 1) % n
        self.offset = pass_offset(o, hand_no)
        self.dealt = [Counter(h) for h in dealt]
        self.dealt_list = [list(h) for h in dealt]
        self.widow = Counter(widow)
        self.in_play = sum(self.dealt, Counter()) + self.widow
        self.hands = [Counter(h) for h in dealt]
        self.passes: list[list[str] | None] = [None] * n
        self.received = [Counter() for _ in range(n)]
        self.passes_done = self.offset == 0
        self.trick: list[tuple[int, str]] = []
        self.tricks: list[tuple[int, list[str], int]] = []
        self.played: list[tuple[int, str]] = []
        self.carried = Counter(widow)  # the widow and cancelled tricks, for the next trick's winner
        self.carried_played = Counter()  # the same without the widow
        self.taken = [Counter() for _ in range(n)]
        self.taken_played = [Counter() for _ in range(n)]  # cards taken, but for the face-down widow
        self.shooter: int | None = None
        self.leader = self.turn = -1
        if self.offset:
            self.phase = "passing"
        else:
            self.begin_play()

    def begin_play(self) -> None:
        self.phase = "playing"
        if self.cancel:
            lead = (self.dealer + 1) % self.n
        else:
            self.lowest_club = min((c for c in self.in_play if c[1] == "C"), key=rank)
            lead = next(s for s in range(self.n) if self.hands[s][self.lowest_club])
        self.leader = self.turn = lead

    def corner(self, name: str) -> None:
        """Note that a rarely reached rule of docs/rules.md applied to a legal-move computation."""
        self.corners.add(name)
        event(f"rule corner: {name}")

    def to_act(self) -> list[int]:
        if self.phase == "passing":
            return [s for s in range(self.n) if self.passes[s] is None]
        if self.phase in ("playing", "moon_choice"):
            return [self.turn]
        return []

    @property
    def first_trick(self) -> bool:
        return not self.cancel and not self.tricks

    @property
    def broken(self) -> bool:
        """A heart or the QS has been played to an earlier trick of this hand."""
        return any(is_penalty(c) for _, cards, _ in self.tricks for c in cards)

    def legal(self, seat: int) -> set[str]:
        hand = {c for c, k in self.hands[seat].items() if k}
        if not self.trick:
            if self.first_trick:
                return hand & {self.lowest_club}
            if self.broken:
                return hand
            other = {c for c in hand if c[1] != "H"}
            if other == {"QS"}:
                self.corner("leader holds only hearts and the QS, hearts unbroken")
            elif not other:
                self.corner("leader holds only hearts, hearts unbroken")
            return other or hand
        led = self.trick[0][1][1]
        follow = {c for c in hand if c[1] == led}
        if follow:
            return follow
        if self.first_trick:
            safe = {c for c in hand if not is_penalty(c)}
            if not safe:
                self.corner("void on the first trick with only hearts and the QS")
            elif self.bonus in safe and all(is_penalty(c) or c == self.bonus for c in hand):
                self.corner("void on the first trick with only penalty cards and the bonus card")
            return safe or hand
        return hand

    def refusal(self, seat: int, card: str) -> set[str]:
        """The error codes docs/rules.md justifies for a held card that is not legal now."""
        hand = {c for c, k in self.hands[seat].items() if k}
        if not self.trick:
            if self.first_trick:
                return {"must_lead_lowest_club"}
            if {c for c in hand if c[1] != "H"} == {"QS"}:
                return {"hearts_not_broken", "must_lead_queen_of_spades"}
            return {"hearts_not_broken"}
        if any(c[1] == self.trick[0][1][1] for c in hand):
            return {"must_follow_suit"}
        return {"no_points_on_first_trick"}

    def known(self, seat: int | None) -> Counter[str]:
        """The cards of this hand `seat` may know (a spectator: only the cards played)."""
        cards = [c for s, c in self.played if s != seat]
        if seat is not None:
            cards += self.dealt_list[seat]
            if self.passes_done:
                cards += self.received[seat].elements()
        return Counter(cards) if self.cancel else Counter(dict.fromkeys(cards, 1))

    def pass_cards(self, seat: int, cards: list[str]) -> None:
        assert self.phase == "passing" and self.passes[seat] is None
        self.passes[seat] = list(cards)
        if all(p is not None for p in self.passes):
            for s in range(self.n):
                self.hands[s] -= Counter(self.passes[s])
            for s in range(self.n):
                t = (s + self.offset) % self.n
                self.received[t] = Counter(self.passes[s])
                self.hands[t] += self.received[t]
            self.passes_done = True
            self.begin_play()

    def play(self, seat: int, card: str) -> tuple[int, list[str], int] | None:
        """Play a card; returns the finished trick (leader, cards, winner or -1), if any."""
        assert self.phase == "playing" and seat == self.turn and self.hands[seat][card]
        self.hands[seat][card] -= 1
        self.hands[seat] += Counter()
        self.trick.append((seat, card))
        self.played.append((seat, card))
        if len(self.trick) < self.n:
            self.turn = (seat + 1) % self.n
            return None
        cards = [c for _, c in self.trick]
        leader = self.leader
        idx = winning_index(cards, self.cancel)
        last = not any(self.hands)
        self.trick = []
        if idx is None and not last:
            self.carried += Counter(cards)
            self.carried_played += Counter(cards)
            self.tricks.append((leader, cards, -1))
            self.turn = leader
            return self.tricks[-1]
        winner = leader if idx is None else (leader + idx) % self.n
        self.taken[winner] += Counter(cards) + self.carried
        self.taken_played[winner] += Counter(cards) + self.carried_played
        self.carried = Counter()
        self.carried_played = Counter()
        self.tricks.append((leader, cards, winner))
        if last:
            self.end_hand()
        else:
            self.leader = self.turn = winner
        return self.tricks[-1]

    def points(self, taken: Counter[str]) -> int:
        pts = sum(k for c, k in taken.items() if c[1] == "H") + 13 * taken["QS"]
        if self.bonus:
            pts -= 10 * taken[self.bonus]
        return pts

    def end_hand(self) -> None:
        penalties = {c: k for c, k in self.in_play.items() if is_penalty(c)}
        for s in range(self.n):
            if all(self.taken[s][c] >= k for c, k in penalties.items()):
                self.shooter = self.turn = s
                self.phase = "moon_choice"
                self.moons += 1
                return
        self.score(None)

    def row(self, choice: str | None) -> list[int]:
        if choice is None:
            return [self.points(t) for t in self.taken]
        value = MOON_VALUE[self.o.variant]
        row = [-10 * t[self.bonus] if self.bonus else 0 for t in self.taken]
        for s in range(self.n):
            if choice == "subtract" and s == self.shooter:
                row[s] -= value
            elif choice == "add" and s != self.shooter:
                row[s] += value
        return row

    def default_moon_choice(self) -> str:
        """docs/rules.md: add when it ends the game with the shooter winning; otherwise subtract."""
        totals = [t + p for t, p in zip(self.totals, self.row("add"), strict=True)]
        winners = game_end(self.o, totals)
        return "add" if winners is not None and self.shooter in winners else "subtract"

    def score(self, choice: str | None) -> None:
        row = self.row(choice)
        bonus = -10 if self.bonus else 0
        value = MOON_VALUE[self.o.variant]
        if choice is None:
            assert sum(row) == HAND_POINTS[self.o.variant]
        elif choice == "subtract":
            assert sum(row) == -value + bonus
        else:
            assert sum(row) == (self.n - 1) * value + bonus
        self.totals = [t + p for t, p in zip(self.totals, row, strict=True)]
        moon = None if choice is None else {"seat": self.shooter, "choice": choice}
        self.rows.append((row, moon))
        self.finished.append(
            {
                "hand": self.hand_no,
                "dealt": [elements(d) for d in self.dealt],
                "widow": elements(self.widow),
                "tricks": [(leader, list(cards), winner) for leader, cards, winner in self.tricks],
                "points": row,
                "totals": list(self.totals),
                "moon": moon,
            }
        )
        winners = game_end(self.o, self.totals)
        if winners is not None:
            self.phase = "game_over"
            self.winners = winners
        else:
            self.phase = "next_hand"


# -- the driver: plays a game through the engine and checks the engine against the model ---------------


class Game:
    def __init__(
        self, state: State, rnd: Random, *, replayable: bool, policy: str = "uniform", favourite: int = -1
    ) -> None:
        """`policy`: how the seats choose among their legal actions - "uniform"; "moon", helping one
        seat per hand take every trick; "twins", playing a card identical to one already in the
        trick whenever possible (Cancellation: cancelled and carried tricks)."""
        self.state = state
        self.o = state.options
        self.n = state.options.players
        self.rnd = rnd
        # Which illegal actions to try is sampled from a plain Random seeded by hypothesis: as
        # reproducible, and much cheaper than a hypothesis draw per sample.
        self.aux = Random(rnd.getrandbits(64))
        self.replayable = replayable
        self.policy = policy
        self.favourite = favourite
        self.initial_totals = list(state.totals)
        self.first_hand = state.hand_no
        self.model = Model(self.o, list(state.totals))
        self.model.start_hand(state.hand_no, [names(h) for h in state.dealt], names(state.widow))
        self.new_hand_started()
        self.moves: list[tuple[int, Any]] = []
        self.checkpoints = set(self.aux.sample(range(1, 300), 2)) if replayable else set()
        self.seen_records = 0
        self.commitments: dict[int, str] = {}
        self.check_state()

    # -- playing -------------------------------------------------------------------------------------
    def run(self, *, one_hand: bool = False) -> State:
        """Play to the end of the game (or, with one_hand, to the end of the current hand)."""
        hand = self.model.hand_no
        while self.model.phase != "game_over" and not (one_hand and self.model.hand_no != hand):
            self.step()
        if self.model.phase == "game_over":
            self.check_game_over()
        return self.state

    def new_hand_started(self) -> None:
        if self.policy == "moon" and self.favourite < 0:
            self.hand_favourite = self.rnd.randrange(self.n)
        else:
            self.hand_favourite = self.favourite

    def step(self) -> None:
        state, model = self.state, self.model
        snapshot = loads(dumps(state))
        assert snapshot == state, "dumps/loads changed the state"
        if not model.trick or self.aux.random() < 0.2:
            # The same path with the JSON step spelled out (it is what dumps/loads do), so at every
            # trick start, hand end and game end, and at random steps in between.
            raw = state_from_dict(json.loads(json.dumps(state_to_dict(state))))
            assert raw == state, "state_to_dict/state_from_dict changed the state"
        self.try_illegal_actions(state, snapshot)
        seat, action = self.choose()
        assert action in state.legal_actions(seat)
        before = self.known
        hand_before = model.hand_no
        new, events = state.apply(seat, action)
        assert state == snapshot, "apply changed the state it was applied to"
        self.moves.append((seat, action))
        finished = self.update_model(seat, action, events)
        if model.phase == "next_hand":
            assert new.hand_no == hand_before + 1
            model.start_hand(new.hand_no, [names(h) for h in new.dealt], names(new.widow))
            self.new_hand_started()
        self.state = new
        self.check_state()
        self.check_events(events, before, action, hand_before, finished)
        if len(self.moves) in self.checkpoints:
            assert replay(self.o, new.seed, self.moves) == new, "replay of the moves so far differs"

    def choose(self) -> tuple[int, Any]:
        state, model, rnd = self.state, self.model, self.rnd
        if model.phase == "passing":
            seat = rnd.choice(model.to_act())
            legal = state.legal_actions(seat)
            hand = elements(model.hands[seat])
            assert len(legal) == comb(len(hand), 3)
            if seat == self.hand_favourite:
                cards = sorted(hand, key=rank)[:3]
            elif rnd.random() < 0.5:
                picked = legal[rnd.randrange(len(legal))]
                cards = [card_name(c) for c in picked.cards]
                assert len(set(cards)) == 3 and set(cards) <= set(hand)
            else:
                cards = rnd.sample(hand, 3)
            return seat, Pass(tuple(parse_card(c) for c in cards))
        if model.phase == "playing":
            seat = model.turn
            return seat, Play(parse_card(self.pick_card(seat, sorted(model.legal(seat)))))
        assert model.phase == "moon_choice"
        seat = model.shooter
        legal = state.legal_actions(seat)
        assert set(legal) == {MoonChoice("subtract"), MoonChoice("add")} and len(legal) == 2
        if rnd.random() < 0.5:
            choice = state.default_moon_choice()
            event(f"moon: default choice {choice}")
            assert choice == model.default_moon_choice(), (
                f"default moon choice {choice!r}; docs/rules.md says {model.default_moon_choice()!r} "
                f"(totals {model.totals}, shooter {seat}, target {self.o.target_score}, {self.o.tie_rule})"
            )
            return seat, MoonChoice(choice)
        action = rnd.choice(list(legal))
        event(f"moon: chosen {action.choice}")
        return seat, action

    def pick_card(self, seat: int, cards: list[str]) -> str:
        """A legal card, as the policy picks it."""
        rnd, fav = self.rnd, self.hand_favourite
        if self.policy == "twins":
            model = self.model
            if model.trick:
                twins = [c for c in cards if any(c == t for _, t in model.trick)]
            else:  # lead a card whose twin is still out, in another hand
                out = Counter(c for _, c in model.played) + model.hands[seat]
                twins = [c for c in cards if out[c] < 2]
            return rnd.choice(twins or cards)
        if fav < 0:
            return rnd.choice(cards)
        if seat == fav:
            top = max(rank(c) for c in cards)
            return rnd.choice([c for c in cards if rank(c) == top])
        trick = self.model.trick
        if any(s == fav for s, _ in trick):
            win = winning_index([c for _, c in trick], self.model.cancel)
            if win is not None and trick[win][0] == fav:
                return rnd.choice([c for c in cards if is_penalty(c)] or cards)
            return rnd.choice([c for c in cards if not is_penalty(c)] or cards)
        low = min(rank(c) for c in cards)
        return rnd.choice([c for c in cards if rank(c) == low])

    def update_model(self, seat: int, action: Any, events: list[Any]) -> tuple[int, list[str], int] | None:
        model = self.model
        if isinstance(action, Pass):
            model.pass_cards(seat, [card_name(c) for c in action.cards])
            return None
        if isinstance(action, MoonChoice):
            model.score(action.choice)
            return None
        return model.play(seat, card_name(action.card))

    # -- illegal actions -----------------------------------------------------------------------------
    def refuse(self, seat: Any, action: Any, codes: set[str]) -> None:
        """The action (or the action built by calling `action`) is refused with one of `codes`, by
        `apply` and by the in-place `push` (tried on a copy, which must be left unchanged too)."""
        for push in (False, True):
            try:
                if callable(action):
                    action = action()
                if push:
                    self.probe.push(seat, action)
                else:
                    self.state.apply(seat, action)
            except EngineError as exc:
                assert exc.code in codes, f"{action!r} by seat {seat!r}: code {exc.code!r}, expected {codes}"
            else:
                raise AssertionError(f"{action!r} by seat {seat!r} was accepted; expected {codes}")

    def try_illegal_actions(self, state: State, snapshot: State) -> None:
        model, rnd, n = self.model, self.aux, self.n
        self.probe = state.copy()
        any_card = Play(parse_card(rnd.choice(PACK)))
        seat = rnd.randrange(n)
        self.refuse(rnd.choice([n, n + 1, -1]), any_card, {"invalid_seat"})
        if model.phase == "game_over":
            hand = [0, 1, 2]
            self.refuse(seat, any_card, {"game_over"})
            self.refuse(seat, lambda: Pass(tuple(hand)), {"game_over"})
            self.refuse(seat, MoonChoice(rnd.choice(["add", "subtract"])), {"game_over"})
        elif model.phase == "passing":
            hand = elements(model.hands[seat])
            self.refuse(seat, any_card, {"wrong_phase"})
            self.refuse(seat, MoonChoice("add"), {"wrong_phase"})
            held = [parse_card(c) for c in rnd.sample(hand, 4)]
            if model.passes[seat] is not None:
                self.refuse(seat, lambda: Pass(tuple(held[:3])), {"bad_pass"})
            else:
                absent = parse_card(rnd.choice([c for c in PACK if c not in hand]))
                bad = rnd.choice(
                    [
                        (held[0], held[1]),
                        tuple(held),
                        (held[0], held[0], held[1]),
                        (held[0], held[1], absent),
                        (),
                    ]
                )
                self.refuse(seat, lambda: Pass(bad), {"bad_pass"})
        elif model.phase == "playing":
            turn = model.turn
            hand = model.hands[turn]
            other = rnd.choice([s for s in range(n) if s != turn])
            if model.hands[other]:
                self.refuse(
                    other, Play(parse_card(rnd.choice(elements(model.hands[other])))), {"not_your_turn"}
                )
            missing = [c for c in PACK if not hand[c]]
            self.refuse(turn, Play(parse_card(rnd.choice(missing))), {"card_not_in_hand"})
            legal = model.legal(turn)
            for card in sorted(c for c in hand if hand[c] and c not in legal):
                codes = model.refusal(turn, card)
                assert codes <= ILLEGAL_PLAY_CODES | {"must_lead_queen_of_spades"}
                self.refuse(turn, Play(parse_card(card)), codes)
            cards = tuple(parse_card(c) for c in elements(hand)[:3])
            self.refuse(turn, lambda: Pass(cards), {"wrong_phase"})
            self.refuse(turn, MoonChoice("subtract"), {"wrong_phase"})
        else:
            shooter = model.shooter
            other = rnd.choice([s for s in range(n) if s != shooter])
            self.refuse(other, MoonChoice(rnd.choice(["add", "subtract"])), {"not_your_turn"})
            self.refuse(shooter, lambda: MoonChoice("sideways"), {"moon_choice_invalid"})
            self.refuse(shooter, any_card, {"wrong_phase"})
            self.refuse(shooter, lambda: Pass((0, 1, 2)), {"wrong_phase"})
        assert state == snapshot, "a refused action changed the state"
        assert self.probe == snapshot, "a refused push changed the state"

    # -- checks of the engine's state ----------------------------------------------------------------
    def check_state(self) -> None:
        state, model, n = self.state, self.model, self.n
        assert state.phase == model.phase
        assert state.hand_no == model.hand_no
        assert state.to_act() == model.to_act()
        assert list(state.totals) == model.totals
        # Cards are conserved: hands + current trick + this hand's tricks + widow = the cards dealt,
        # and hands + current trick + cards taken + cards carried (widow, cancelled tricks) too.
        dealt = [c for h in state.dealt for c in names(h)] + names(state.widow)
        assert Counter(dealt) == model.in_play
        trick = [card_name(c) for c in state.trick]
        played = Counter([card_name(c) for _, cards, _ in state.tricks for c in cards] + trick)
        copies = 2 if model.cancel else 1
        assert max(played.values(), default=0) <= copies, f"a card was played twice: {played}"
        in_hands = []
        for s in range(n):
            hand = names(state.hands[s])
            assert sorted(hand) == elements(model.hands[s]), f"seat {s}'s hand differs from the rules"
            in_hands += hand
        assert Counter(in_hands + names(state.widow)) + played == model.in_play, "cards not conserved"
        taken = [c for m in state.taken for c in names(m)] + names(state.carried)
        assert Counter(taken + in_hands + trick) == model.in_play, "taken + carried cards not conserved"
        # The trick and the tricks of this hand, winners recomputed from the card names.
        assert [card_name(c) for c in state.trick] == [c for _, c in model.trick]
        assert len(state.tricks) == len(model.tricks)
        for (leader, cards, winner), (m_leader, m_cards, m_winner) in zip(
            state.tricks, model.tricks, strict=True
        ):
            assert (leader, [card_name(c) for c in cards], winner) == (m_leader, m_cards, m_winner)
        # Scoresheet: one row per finished hand; totals are the sum of the rows.
        assert len(state.sheet) == len(model.rows)
        running = list(self.initial_totals)
        for row, (m_row, m_moon) in zip(state.sheet, model.rows, strict=True):
            running = [t + p for t, p in zip(running, row["points"], strict=True)]
            assert row["points"] == m_row and row["moon"] == m_moon
            assert row["totals"] == running
        assert running == list(state.totals)
        # Legal actions of every seat.
        for s in range(n):
            legal = state.legal_actions(s)
            if model.phase == "playing" and s == model.turn:
                got = [card_name(a.card) for a in legal]
                assert len(got) == len(set(got))
                assert set(got) == model.legal(s), f"legal plays of seat {s}: {got}"
            elif model.phase == "passing" and model.passes[s] is None:
                assert len(legal) == comb(sum(model.hands[s].values()), 3)
            elif model.phase == "moon_choice" and s == model.shooter:
                assert len(legal) == 2
            else:
                assert len(legal) == 0, f"seat {s} has legal actions while not to act"
        if model.phase == "game_over":
            assert list(state.winners) == model.winners
        self.check_views()

    def view_seats(self) -> list[int | None]:
        """Whose views to check now: every seat and a spectator - except in the middle of a
        Cancellation trick, where view() of a two-pack state costs over a millisecond a seat (each
        second-pack card of the tricks is named through the slow path of cards.names): there, the
        seat that just played, the seat on turn, one other seat and the spectator, unless
        HYPOTHESIS_PROFILE asks for a longer run. Every seat is still checked at every trick start."""
        model = self.model
        if not model.cancel or SCALE > 1 or not model.trick or model.phase != "playing":
            return [*range(self.n), None]
        last = model.trick[-1][0]
        seats = {last, model.turn, self.aux.randrange(self.n)}
        return [*sorted(seats), None]

    def check_views(self) -> None:
        state, model = self.state, self.model
        over = model.phase == "game_over"
        secret = json_fragment(state.seed)
        self.known = {seat: model.known(seat) for seat in [*range(self.n), None]}
        public: dict[str, Any] = {}
        for seat in reversed(self.view_seats()):  # the spectator first
            v = view(state, seat)
            known = self.known[seat]
            # Own hand, current trick and finished tricks hold disjoint cards, so with two packs a card
            # shown twice must be known twice (both copies held, or both played). The legal actions
            # repeat cards of the hand and are checked against it on their own. Parts equal to the
            # spectator's were checked there, against what everyone knows.
            rest = {
                k: x
                for k, x in v.items()
                if k not in ("options", "previous_hands", "legal_actions")
                and (k not in public or public[k] != x)
            }
            if seat is None:
                public = v
            text = json.dumps(rest)
            tokens = card_tokens(text)
            if not model.cancel:
                tokens = Counter(tokens.keys())
            leak = excess(tokens, known)
            assert not leak, f"view of seat {seat} shows {leak} it may not know: {text}"
            assert over or secret not in text, f"the game seed is in the view before the game ended: {text}"
            legal_cards = set(card_tokens(json.dumps(v.get("legal_actions"))))
            assert legal_cards <= set(model.hands[seat] if seat is not None else ())
            if model.phase == "playing" and seat == model.turn:
                assert legal_cards == model.legal(seat)
            assert len(v["previous_hands"]) == len(model.finished)
            assert v["to_act"] == model.to_act()
            assert v["scores"] == model.totals
            assert [token_of(x) for x in v["trick"]] == [c for _, c in model.trick]
            assert v["hand_sizes"] == [sum(h.values()) for h in model.hands]
            # Points taken so far, as shown: those of the played cards won; the widow stays face down.
            assert v["points_taken"] == [model.points(t) for t in model.taken_played]
            if model.phase == "playing" and not model.trick:
                assert v["hearts_broken"] == model.broken
            assert v["deal_commitment"] == self.commitments.setdefault(model.hand_no, v["deal_commitment"])
            if seat is None:
                assert "hand" not in v and "my_pass" not in v and "received" not in v
                continue
            assert sorted(v["hand"]) == elements(model.hands[seat])
            mine = model.passes[seat]
            if mine is None:
                assert v["my_pass"] is None
            else:
                assert sorted(v["my_pass"]["cards"]) == sorted(mine)
                assert v["my_pass"]["to"] == (seat + model.offset) % self.n
            if model.offset and model.passes_done:
                assert sorted(v["received"]["cards"]) == elements(model.received[seat])
            else:
                assert v["received"] is None, "received cards shown before every seat passed"
        # Records of finished hands (their full deals) appear only once the hand is over.
        history = v["previous_hands"]  # the spectator's: every finished hand, in full
        for record, mine in zip(history, model.finished, strict=True):
            assert record["hand"] == mine["hand"]
        for record, mine in zip(
            history[self.seen_records :], model.finished[self.seen_records :], strict=True
        ):
            assert [sorted(d) for d in record["dealt"]] == mine["dealt"]
            assert sorted(record["widow"]) == mine["widow"]
            assert record["points"] == mine["points"] and record["totals"] == mine["totals"]
            assert record["moon"] == mine["moon"]
            tricks = [
                (t["leader"], [token_of(p) for p in t["cards"]], -1 if t["winner"] is None else t["winner"])
                for t in record["tricks"]
            ]
            assert tricks == mine["tricks"]
            # The hand's seed, revealed now, hashes to the commitment shown while it was played.
            assert record["deal_commitment"] == self.commitments[record["hand"]]
            assert hashlib.sha256(record["seed"].encode()).hexdigest() == record["deal_commitment"]
            if self.replayable or record["hand"] != self.first_hand:
                # ... and reproduces the deal (hand-built deals aside).
                hands, widow = deal(self.o, record["seed"])
                assert [sorted(names(h)) for h in hands] == mine["dealt"]
                assert sorted(names(widow)) == mine["widow"]
            assert over or secret not in json.dumps(record), "the game seed is in a hand record"
        self.seen_records = len(history)

    def check_events(
        self,
        events: list[Any],
        before: dict[int | None, Counter[str]],
        action: Any,
        hand_before: int,
        finished: tuple[int, list[str], int] | None,
    ) -> None:
        model, n = self.model, self.n
        types = [e.type for e in events]
        for e in events:
            if e.to is not None:
                assert e.type in ("cards_dealt", "cards_passed", "cards_received")
                assert e.data["seat"] == e.to
        if "cards_received" in types:
            assert "passes_complete" in types
            assert types.index("passes_complete") < types.index("cards_received")
            for e in events:
                if e.type == "cards_received":
                    assert sorted(e.data["cards"]) == elements(model.received[e.to])
        won = [e for e in events if e.type == "trick_won"]
        if finished is not None and finished[2] >= 0:
            _leader, cards, winner = finished
            [ev] = won
            assert ev.data["seat"] == winner, f"trick {cards} won by seat {ev.data['seat']}, not {winner}"
            assert ev.data["cards"] == cards
        else:
            assert not won, "a trick_won event without a trick won (Cancellation: all led cards cancelled)"
            if finished is not None:
                event("a trick carried (every led-suit card cancelled)")
        scored = [e for e in events if e.type == "hand_scored"]
        if scored:
            [ev] = scored
            row, moon = model.rows[-1]
            assert ev.data["points"] == row and ev.data["moon"] == moon and ev.data["hand"] == hand_before
            assert ev.data["totals"] == model.totals
            # Every hand distributes 26 points (Omnibus 16, Cancellation 52) unless the moon was shot.
            bonus = -10 if model.bonus else 0
            value = MOON_VALUE[self.o.variant]
            expected = {
                None: HAND_POINTS[self.o.variant],
                "subtract": bonus - value,
                "add": bonus + (n - 1) * value,
            }[moon and moon["choice"]]
            assert sum(ev.data["points"]) == expected
        if "hand_revealed" in types:
            assert scored and types.index("hand_scored") < types.index("hand_revealed")
        if model.phase == "moon_choice" and isinstance(action, Play):
            assert "moon_shot" in types and not scored
        if "game_over" in types:
            assert model.phase == "game_over" and scored, "the game ended without a hand being scored"
            assert types[-1] == "game_over"
        else:
            assert model.phase != "game_over"
        if "hand_started" in types:
            assert scored and types.index("hand_scored") < types.index("hand_started")
            [ev] = [e for e in events if e.type == "hand_started"]
            assert ev.data["hand"] == model.hand_no == hand_before + 1
            assert ev.data["dealer"] == model.dealer
            assert ev.data["pass_direction"] == direction_name(self.o, model.offset)
        # What every seat (and a spectator) is shown of the events.
        secret = json_fragment(self.state.seed)
        played = Counter([card_name(action.card)]) if isinstance(action, Play) else Counter()
        for seat in [*range(n), None]:
            shown = visible_events(events, seat)
            assert len(shown) == sum(1 for e in events if e.to is None or e.to == seat)
            try:
                json.dumps(shown)
            except TypeError as exc:
                raise AssertionError(f"visible events are not JSON: {exc}: {shown!r}") from exc
            # Events up to a new hand's start may show what the seat knew before the action plus the
            # card just played (or, same hand, what it knows now: cards received once all passed);
            # events after it only the new hand's knowledge. Finished hands' records are public.
            allowed = before[seat].copy()
            allowed.update(played)
            if model.hand_no == hand_before:
                allowed |= self.known[seat]
            if not model.cancel:
                allowed = Counter(dict.fromkeys(allowed, 1))
            groups: list[tuple[list[dict[str, Any]], Counter[str]]] = [([], allowed)]
            for e in shown:
                if e["type"] == "hand_started":
                    groups.append(([], self.known[seat]))
                if e["type"] == "hand_revealed":
                    assert e["record"]["hand"] == hand_before
                elif e["type"] == "game_over":
                    assert e["seed"] == self.state.seed and model.phase == "game_over"
                else:
                    groups[-1][0].append(e)
            for group, known in groups:
                # With one pack tokens are compared as a set; with two, event by event, so a card
                # named twice in one event must be known twice.
                for text in [json.dumps(group)] if not model.cancel else map(json.dumps, group):
                    tokens = card_tokens(text)
                    if not model.cancel:
                        tokens = Counter(tokens.keys())
                    leak = excess(tokens, known)
                    assert not leak, f"events show {leak} to seat {seat}, who may not know them: {text}"
                    assert secret not in text, f"the game seed is in an event before the game ended: {text}"

    def check_game_over(self) -> None:
        state, model = self.state, self.model
        assert state.phase == "game_over" == model.phase
        totals = model.totals
        assert max(totals) >= self.o.target_score
        assert list(state.winners) == [s for s, t in enumerate(totals) if t == min(totals)]
        if self.o.tie_rule != "shared":
            assert len(state.winners) == 1
        snapshot = loads(dumps(state))
        assert snapshot == state
        self.try_illegal_actions(state, snapshot)
        assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state
        for seat in [*range(self.n), None]:  # the seed, secret until now, is revealed
            assert json_fragment(state.seed) in json.dumps(view(state, seat))
        if self.replayable:
            assert replay(self.o, state.seed, self.moves) == state


# -- the properties ----------------------------------------------------------------------------------


def play_whole_game(
    variant: str, players: int, card: str, seed: str, tie_rule: str, target: int, policy: str, rnd: Random
) -> None:
    options = Options.build(
        players=players, variant=variant, omnibus_card=card, tie_rule=tie_rule, target_score=target
    )
    Game(new_game(options, seed), rnd, replayable=True, policy=policy).run()


GAME_ARGS = {
    "seed": SEEDS,
    "tie_rule": st.sampled_from(["play_on", "shared"]),
    "rnd": st.randoms(use_true_random=False),
}


# The largest tables' whole games are left to CI (marked slow); the inner loop plays every variant
# at every size up to five (Omnibus) and eight (Cancellation) players.
@pytest.mark.parametrize(
    ("variant", "players", "card"),
    [
        pytest.param(*t, marks=pytest.mark.slow) if t[0] == "omnibus" and t[1] >= 6 else t
        for t in TABLES
        if t[0] != "cancellation"
    ],
)
@examples(1)
@given(policy=st.sampled_from(["uniform", "moon"]), **GAME_ARGS)
def test_whole_random_games_keep_every_invariant(
    variant: str, players: int, card: str, seed: str, tie_rule: str, policy: str, rnd: Random
) -> None:
    """Classic and Omnibus, 3 to 7 players: whole games to target 50 (the shortest allowed), every
    invariant checked after every action."""
    play_whole_game(variant, players, card, seed, tie_rule, 50, policy, rnd)


@pytest.mark.parametrize(
    "players", [pytest.param(n, marks=pytest.mark.slow) if n > 8 else n for n in range(6, 11)]
)
@examples(1)
@given(policy=st.sampled_from(["uniform", "moon", "twins"]), **GAME_ARGS)
def test_whole_random_cancellation_games_keep_every_invariant(
    players: int, seed: str, tie_rule: str, policy: str, rnd: Random
) -> None:
    """Cancellation Hearts, 6 to 10 players (two packs, widow, cancelled and carried tricks), to 50."""
    play_whole_game("cancellation", players, "JD", seed, tie_rule, 50, policy, rnd)


@examples(1)
@given(policy=st.sampled_from(["uniform", "moon"]), **GAME_ARGS)
def test_whole_random_game_at_the_default_table(seed: str, tie_rule: str, policy: str, rnd: Random) -> None:
    """The default table (4 players, classic, target 100) played to the end, with either tie rule."""
    options = Options.build(tie_rule=tie_rule)
    assert options.target_score == 100 and options.players == 4 and options.variant == "classic"
    Game(new_game(options, seed), rnd, replayable=True, policy=policy).run()


def moon_deal_four(draw: st.DrawFn) -> tuple[list[list[str]], int]:
    """A 4-player deal where the shooter holds the top cards of every suit it holds, a club among
    them: it wins the opening trick and then every trick it leads, whatever anyone plays."""
    shooter = draw(st.integers(0, 3))
    counts = Counter([*draw(st.lists(st.sampled_from(SUITS), min_size=12, max_size=12)), "C"])
    mine = [RANKS[12 - i] + suit for suit in SUITS for i in range(counts[suit])]
    rest = draw(st.permutations([c for c in PACK if c not in mine]))
    others = [rest[13 * i : 13 * i + 13] for i in range(3)]
    return [*others[:shooter], mine, *others[shooter:]], shooter


def moon_deal_cancellation(
    draw: st.DrawFn, n: int, hand_number: int
) -> tuple[list[list[str]], list[str], int]:
    """A Cancellation deal where the seat on lead holds the top copies of each suit it holds; the twin
    of its one odd card per suit lies in the widow, so nothing it leads can be cancelled or beaten."""
    k, w = 104 // n, WIDOW_SIZE[n]
    shooter = hand_number % n  # the dealer's left leads the first trick
    counts = Counter(draw(st.lists(st.sampled_from(SUITS), min_size=k, max_size=k)))
    odd = [s for s in SUITS if counts[s] % 2]
    while len(odd) > w:
        counts[odd[0]] -= 1
        counts[odd[1]] += 1
        odd = odd[2:]
    mine, widow = [], []
    for suit in SUITS:
        order = [RANKS[12 - i // 2] + suit for i in range(26)]  # A A K K Q Q ...
        mine += order[: counts[suit]]
        if counts[suit] % 2:
            widow.append(order[counts[suit]])
    rest = draw(st.permutations(elements(Counter(PACK * 2) - Counter(mine) - Counter(widow))))
    fill = w - len(widow)
    widow += rest[:fill]
    rest = rest[fill:]
    others = [rest[k * i : k * i + k] for i in range(n - 1)]
    return [*others[:shooter], mine, *others[shooter:]], widow, shooter


# A target and starting totals close to it, often equal ones: every hand may end the game, with
# ties for the lowest total (play on, or share the win) and moons that decide it.
TARGETS_AND_TOTALS = st.sampled_from([50, 100]).flatmap(
    lambda target: st.tuples(
        st.just(target),
        st.lists(
            st.one_of(
                st.sampled_from([target - 26, target - 13, target - 1]), st.integers(target - 45, target - 1)
            ),
            min_size=10,
            max_size=10,
        ),
    )
)


@examples(10)
@given(
    data=st.data(),
    variant=st.sampled_from(["classic", "omnibus"]),
    card=st.sampled_from(["JD", "TD"]),
    tie_rule=st.sampled_from(["play_on", "shared"]),
    target_totals=TARGETS_AND_TOTALS,
    hand_number=st.sampled_from([4, 8, 12]),
    seed=SEEDS,
    rnd=st.randoms(use_true_random=False),
)
def test_forced_moons_score_and_default_choice(
    data: st.DataObject,
    variant: str,
    card: str,
    tie_rule: str,
    target_totals: tuple[int, list[int]],
    hand_number: int,
    seed: str,
    rnd: Random,
) -> None:
    """Hold hands (4 players, every 4th hand) dealt so one seat must take every trick: the moon
    phase, both choices, the default choice and the end-of-game check after a moon."""
    target, totals = target_totals
    hands, shooter = data.draw(st.composite(moon_deal_four)())
    options = Options.build(
        players=4, variant=variant, omnibus_card=card, tie_rule=tie_rule, target_score=target
    )
    state = State.from_deal(options, hands=hands, hand_number=hand_number, totals=totals[:4], seed=seed)
    game = Game(state, rnd, replayable=False)
    game.run(one_hand=True)
    assert game.model.moons == 1
    assert game.model.rows[-1][1]["seat"] == shooter


@examples(2)
@given(
    data=st.data(),
    players=st.sampled_from([6, 7, 9, 10]),
    tie_rule=st.sampled_from(["play_on", "shared"]),
    target_totals=TARGETS_AND_TOTALS,
    hand_number=st.integers(1, 20),
    seed=SEEDS,
    rnd=st.randoms(use_true_random=False),
)
def test_forced_cancellation_moons(
    data: st.DataObject,
    players: int,
    tie_rule: str,
    target_totals: tuple[int, list[int]],
    hand_number: int,
    seed: str,
    rnd: Random,
) -> None:
    """Cancellation deals where the leader must take all 26 hearts, both QS and the widow: the
    52-point moon, both choices and the default."""
    target, totals = target_totals
    hands, widow, shooter = data.draw(st.composite(moon_deal_cancellation)(players, hand_number))
    options = Options.build(players=players, variant="cancellation", tie_rule=tie_rule, target_score=target)
    state = State.from_deal(
        options, hands=hands, widow=widow, hand_number=hand_number, totals=totals[:players], seed=seed
    )
    game = Game(state, rnd, replayable=False)
    game.run(one_hand=True)
    assert game.model.moons == 1
    assert game.model.rows[-1][1]["seat"] == shooter


def skewed_deal(draw: st.DrawFn, options: Options) -> tuple[list[list[str]], list[str]]:
    """A deal from a nearly sorted deck (suits in a random order, the QS next to the hearts, a few
    random swaps), dealt in blocks: hands of one or two suits, voids, a seat holding only hearts
    or only hearts and the QS, twin cards in one hand - the corners of the rules that random
    deals seldom reach."""
    order = draw(st.permutations("CDS"))  # the suit dealt just before the QS and the hearts varies
    deck = sorted(
        full_deck(options).elements(),
        key=lambda c: (4 if c == "QS" else 5 if c[1] == "H" else order.index(c[1]), rank(c)),
    )
    for _ in range(draw(st.integers(0, len(deck) // 8))):
        i, j = draw(st.integers(0, len(deck) - 1)), draw(st.integers(0, len(deck) - 1))
        deck[i], deck[j] = deck[j], deck[i]
    n = options.players
    each = len(deck) // n
    hands = [deck[each * i : each * i + each] for i in range(n)]
    seats = draw(st.permutations(range(n)))
    return [hands[s] for s in seats], deck[each * n :]


SKEWED_ARGS = {
    "data": st.data(),
    "tie_rule": st.sampled_from(["play_on", "shared"]),
    "target_totals": TARGETS_AND_TOTALS,
    "hand_number": st.integers(1, 8),
    "seed": SEEDS,
    "rnd": st.randoms(use_true_random=False),
}


def play_skewed_hand(
    data: st.DataObject,
    variant: str,
    players: int,
    tie_rule: str,
    target_totals: tuple[int, list[int]],
    hand_number: int,
    seed: str,
    rnd: Random,
) -> None:
    target, totals = target_totals
    card = data.draw(st.sampled_from(["JD", "TD"]))
    options = Options.build(
        players=players, variant=variant, omnibus_card=card, tie_rule=tie_rule, target_score=target
    )
    hands, widow = data.draw(st.composite(skewed_deal)(options))
    state = State.from_deal(
        options, hands=hands, widow=widow, hand_number=hand_number, totals=totals[:players], seed=seed
    )
    policies = ["uniform", "moon", "twins"] if variant == "cancellation" else ["uniform", "moon"]
    Game(state, rnd, replayable=False, policy=data.draw(st.sampled_from(policies))).run(one_hand=True)


@pytest.mark.parametrize("variant", ["classic", "omnibus"])
@examples(6)
@given(players=st.integers(3, 7), **SKEWED_ARGS)
def test_skewed_deals_reach_the_corners_of_the_rules(
    variant: str,
    players: int,
    data: st.DataObject,
    tie_rule: str,
    target_totals: tuple[int, list[int]],
    hand_number: int,
    seed: str,
    rnd: Random,
) -> None:
    """One hand from a skewed deal (and the end-of-game check after it), scores near the target."""
    play_skewed_hand(data, variant, players, tie_rule, target_totals, hand_number, seed, rnd)


@examples(1)
@given(players=st.integers(6, 10), **SKEWED_ARGS)
def test_skewed_cancellation_deals(
    players: int,
    data: st.DataObject,
    tie_rule: str,
    target_totals: tuple[int, list[int]],
    hand_number: int,
    seed: str,
    rnd: Random,
) -> None:
    """One Cancellation hand from a skewed deal: twins in one hand, long runs of cancelled tricks."""
    play_skewed_hand(data, "cancellation", players, tie_rule, target_totals, hand_number, seed, rnd)


CORNERS = {
    "void on the first trick with only hearts and the QS": lambda hearts: [*hearts[:12], "QS"],
    "leader holds only hearts, hearts unbroken": lambda hearts: ["AC", *hearts[:12]],
    "leader holds only hearts and the QS, hearts unbroken": lambda hearts: ["AC", "QS", *hearts[:11]],
    "void on the first trick with only penalty cards and the bonus card": lambda hearts: [
        "JD",
        "QS",
        *hearts[:11],
    ],
}


@pytest.mark.parametrize("corner", sorted(CORNERS))
@examples(2)
@given(
    hearts=st.permutations([r + "H" for r in RANKS]),
    data=st.data(),
    seat=st.integers(0, 3),
    hand_number=st.sampled_from([4, 8, 12]),
    target_totals=TARGETS_AND_TOTALS,
    seed=SEEDS,
    rnd=st.randoms(use_true_random=False),
)
def test_decided_corners_of_the_rules_are_reached(
    corner: str,
    hearts: list[str],
    data: st.DataObject,
    seat: int,
    hand_number: int,
    target_totals: tuple[int, list[int]],
    seed: str,
    rnd: Random,
) -> None:
    """The decisions docs/rules.md takes where rule books are silent, each forced by a 4-player hold-hand
    deal: a first-trick void holding only hearts and the QS plays any of them (Omnibus: holding the
    bonus card too, plays the bonus card); a leader holding only hearts leads one; a leader holding
    only hearts and the QS leads the QS. The hand is then played out with every check."""
    mine = CORNERS[corner](hearts)
    others = data.draw(st.permutations([c for c in PACK if c not in mine]))
    hands = [others[13 * i : 13 * i + 13] for i in range(3)]
    hands.insert(seat, mine)
    variant = "omnibus" if "bonus" in corner else "classic"
    target, totals = target_totals
    options = Options.build(players=4, variant=variant, target_score=target)
    state = State.from_deal(options, hands=hands, hand_number=hand_number, totals=totals[:4], seed=seed)
    game = Game(state, rnd, replayable=False)
    game.run(one_hand=True)
    assert corner in game.model.corners


@pytest.mark.parametrize("with_queen", [False, True])
@examples(1)
@given(
    players=st.integers(6, 10),
    hand_number=st.integers(1, 20),
    data=st.data(),
    seed=SEEDS,
    rnd=st.randoms(use_true_random=False),
)
def test_cancellation_leader_with_only_hearts(
    players: int, with_queen: bool, hand_number: int, data: st.DataObject, seed: str, rnd: Random
) -> None:
    """Cancellation: the first leader (left of the dealer) holding only hearts leads one; holding
    only hearts and a QS, leads a QS."""
    k = 104 // players
    mine = ["QS"] * with_queen + [r + "H" for r in RANKS * 2][: k - with_queen]
    rest = data.draw(st.permutations(elements(Counter(PACK * 2) - Counter(mine))))
    widow = rest[: WIDOW_SIZE[players]]
    rest = rest[WIDOW_SIZE[players] :]
    hands = [rest[k * i : k * i + k] for i in range(players - 1)]
    hands.insert(hand_number % players, mine)
    options = Options.build(players=players, variant="cancellation")
    state = State.from_deal(options, hands=hands, widow=widow, hand_number=hand_number, seed=seed)
    game = Game(state, rnd, replayable=False)
    game.run(one_hand=True)
    expected = "leader holds only hearts and the QS" if with_queen else "leader holds only hearts"
    assert f"{expected}, hearts unbroken" in game.model.corners
