"""The game state and its transitions: legal actions, applying an action, scoring and game end."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations
from math import comb
from typing import Any

from .actions import ADD, MOON_CHOICES, PLAYS, SUBTRACT, Action, MoonChoice, Pass, Play
from .cards import (
    HEARTS_MASK,
    ONE_PACK,
    PACK,
    PENALTY_MASK,
    QS_MASK,
    SUIT_MASK,
    bits,
    card_name,
    names,
    names_of,
    parse_card,
    parse_cards,
)
from .deal import cards_in_play, deal, hand_seed, new_seed, seed_commitment
from .errors import EngineError, IllegalAction
from .options import CANCELLATION, OMNIBUS, SHARED, Options

PASSING, PLAYING, MOON, GAME_OVER = "passing", "playing", "moon_choice", "game_over"
PASS_COUNT = 3
_NAMES = tuple(card_name(c) for c in range(2 * PACK))
_DIRECTION_NAMES = {0: "hold", 1: "left", -1: "right", 2: "across"}


class Event:
    """Something an action caused; `to` is the one seat allowed to see it, or None for everyone."""

    __slots__ = ("data", "to", "type")

    def __init__(self, type: str, data: dict[str, Any], to: int | None = None) -> None:
        self.type = type
        self.data = data
        self.to = to

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}

    def __repr__(self) -> str:
        return f"Event({self.type!r}, {self.data!r}, to={self.to!r})"


def pass_offset(options: Options, hand_number: int) -> int:
    """Seats between passer and receiver for a hand: 0 = hold (no passing)."""
    if options.variant == CANCELLATION:
        return 0
    if options.players == 4:
        return (0, 1, 3, 2)[hand_number % 4]
    return 1 if hand_number % 2 else options.players - 1


def pass_direction(options: Options, hand_number: int) -> str:
    off = pass_offset(options, hand_number)
    if off == options.players - 1 and off != 0:
        return "right"
    return _DIRECTION_NAMES[off]


class PassChoices(Sequence[Pass]):
    """Every legal pass of a hand, in lexicographic order, without building them all: a bot or a
    random player can pick `choices[i]` from C(n, 3) options in O(n)."""

    __slots__ = ("_cards",)

    def __init__(self, hand: int) -> None:
        self._cards = [c % PACK for c in bits(hand)]

    def __len__(self) -> int:
        return comb(len(self._cards), PASS_COUNT)

    def __getitem__(self, index: int) -> Pass:  # type: ignore[override]
        total = len(self)
        if index < 0:
            index += total
        if not 0 <= index < total:
            raise IndexError(index)
        n, k, picked, start = len(self._cards), PASS_COUNT, [], 0
        while k:
            for i in range(start, n):
                block = comb(n - i - 1, k - 1)
                if index < block:
                    picked.append(self._cards[i])
                    start, k = i + 1, k - 1
                    break
                index -= block
        return Pass(tuple(picked))

    def __iter__(self) -> Iterator[Pass]:
        return (Pass(c) for c in combinations(self._cards, PASS_COUNT))

    def __contains__(self, action: object) -> bool:
        if type(action) is not Pass:
            return False
        cards = action.cards
        return (
            len(cards) == PASS_COUNT
            and len(set(cards)) == PASS_COUNT
            and all(c in self._cards for c in cards)
        )


class State:
    """One table's game: immutable by convention; `apply` returns a new state and its events."""

    __slots__ = (
        "_legal",
        "broken",
        "carried",
        "dealer",
        "dealt",
        "hand_no",
        "hands",
        "history",
        "leader",
        "options",
        "passes",
        "phase",
        "received",
        "seed",
        "sheet",
        "shooter",
        "taken",
        "totals",
        "trick",
        "tricks",
        "turn",
        "widow",
        "winners",
    )
    # Fields that define the state (everything but caches); serialisation and equality use them.
    FIELDS: tuple[str, ...] = tuple(s for s in __slots__ if not s.startswith("_"))

    options: Options
    seed: str
    hand_no: int
    phase: str
    dealer: int
    hands: tuple[int, ...]
    dealt: tuple[int, ...]
    widow: int
    passes: tuple[int, ...]
    received: tuple[int, ...]
    leader: int
    turn: int
    trick: tuple[int, ...]
    tricks: tuple[tuple[int, tuple[int, ...], int], ...]
    carried: int
    taken: tuple[int, ...]
    broken: bool
    shooter: int
    totals: tuple[int, ...]
    sheet: tuple[dict[str, Any], ...]
    history: tuple[dict[str, Any], ...]
    winners: tuple[int, ...]

    # -- construction -------------------------------------------------------------------

    @classmethod
    def new_game(cls, options: Options | None = None, seed: str | None = None) -> State:
        """A new game, its first hand dealt from `seed` (a fresh secret seed when omitted)."""
        opts = options or Options()
        st = object.__new__(cls)
        st.options = opts
        st.seed = seed if seed is not None else new_seed()
        st.totals = (0,) * opts.players
        st.sheet = ()
        st.history = ()
        st.winners = ()
        st._legal = None
        st._start_hand(1, [])
        return st

    @classmethod
    def from_deal(
        cls,
        options: Options,
        hands: Sequence[Sequence[str]],
        *,
        widow: Sequence[str] = (),
        hand_number: int = 1,
        totals: Sequence[int] | None = None,
        seed: str | None = None,
    ) -> State:
        """A game whose current hand is the given deal (hand-built deals for tests, puzzles and
        imported games); later hands are dealt from `seed` as usual."""
        opts = options
        n = opts.players
        if len(hands) != n:
            raise EngineError("invalid_state", f"a deal needs {n} hands, got {len(hands)}")
        seen: dict[int, int] = {}
        masks = []
        for tokens in (*hands, widow):
            m = 0
            for c in parse_cards(tokens):
                copy = seen.get(c, 0)
                if copy >= (2 if opts.two_packs else 1):
                    raise EngineError("invalid_state", f"{card_name(c)} is dealt too often")
                seen[c] = copy + 1
                m |= 1 << (c + copy * PACK)
            masks.append(m)
        sizes = {m.bit_count() for m in masks[:n]}
        if len(sizes) != 1:
            raise EngineError("invalid_state", "every seat must be dealt the same number of cards")
        all_cards = 0
        for m in masks:
            all_cards |= m
        if all_cards & ~cards_in_play(opts):
            raise EngineError("invalid_state", "the deal holds a card removed for this player count")
        if not opts.two_packs and not all_cards & SUIT_MASK[0]:
            raise EngineError("invalid_state", "a deal needs a club for the opening lead")
        if hand_number < 1 or (totals is not None and len(totals) != n):
            raise EngineError("invalid_state", "hand_number starts at 1 and totals need one entry per seat")
        st = object.__new__(cls)
        st.options = opts
        st.seed = seed if seed is not None else new_seed()
        st.totals = tuple(totals) if totals is not None else (0,) * n
        st.sheet = ()
        st.history = ()
        st.winners = ()
        st._legal = None
        st._start_hand(hand_number, [], (tuple(masks[:n]), masks[n]))
        return st

    def _start_hand(
        self, hand_no: int, events: list[Event], dealt: tuple[tuple[int, ...], int] | None = None
    ) -> None:
        opts = self.options
        n = opts.players
        seed = hand_seed(self.seed, hand_no)
        hands, widow = dealt if dealt is not None else deal(opts, seed)
        self.hand_no = hand_no
        self.dealer = (hand_no - 1) % n
        self.hands = hands
        self.dealt = hands
        self.widow = widow
        self.passes = (0,) * n
        self.received = (0,) * n
        self.trick = ()
        self.tricks = ()
        # The widow travels with the first trick's cards (and with them if that trick is carried).
        self.carried = widow
        self.taken = (0,) * n
        self.broken = False
        self.shooter = -1
        self._legal = None
        offset = pass_offset(opts, hand_no)
        events.append(
            Event(
                "hand_started",
                {
                    "hand": hand_no,
                    "dealer": self.dealer,
                    "pass_direction": pass_direction(opts, hand_no),
                    "deal_commitment": seed_commitment(seed),
                },
            )
        )
        for s in range(n):
            events.append(Event("cards_dealt", {"hand": hand_no, "seat": s, "cards": names(hands[s])}, to=s))
        if offset:
            self.phase = PASSING
            self.leader = self.turn = -1
        else:
            self._begin_play(events)

    def _begin_play(self, events: list[Event]) -> None:
        self.phase = PLAYING
        if self.options.variant == CANCELLATION:
            lead = (self.dealer + 1) % self.options.players
        else:
            lead = self._seat_holding(self.first_lead_card)
        self.leader = self.turn = lead
        events.append(Event("turn", {"seat": lead, "action": "play"}))

    def _seat_holding(self, card: int) -> int:
        bit = 1 << card
        for s, h in enumerate(self.hands):
            if h & bit:
                return s
        raise AssertionError("the opening card is always dealt")

    @property
    def in_play(self) -> int:
        """Mask of every card dealt this hand, widow included."""
        m = self.widow
        for h in self.dealt:
            m |= h
        return m

    @property
    def first_lead_card(self) -> int:
        """The lowest club in play: 2C, or 3C when the 2C is removed (5 players)."""
        low = self.in_play & SUIT_MASK[0] & ONE_PACK
        return (low & -low).bit_length() - 1

    def _copy(self) -> State:
        new = object.__new__(State)
        new.options = self.options
        new.seed = self.seed
        new.hand_no = self.hand_no
        new.phase = self.phase
        new.dealer = self.dealer
        new.hands = self.hands
        new.dealt = self.dealt
        new.widow = self.widow
        new.passes = self.passes
        new.received = self.received
        new.leader = self.leader
        new.turn = self.turn
        new.trick = self.trick
        new.tricks = self.tricks
        new.carried = self.carried
        new.taken = self.taken
        new.broken = self.broken
        new.shooter = self.shooter
        new.totals = self.totals
        new.sheet = self.sheet
        new.history = self.history
        new.winners = self.winners
        new._legal = None
        return new

    # -- queries ------------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        return self.phase == GAME_OVER

    @property
    def first_trick(self) -> bool:
        return not self.tricks and self.options.variant != CANCELLATION

    def to_act(self) -> list[int]:
        """Seats whose action the game is waiting for (several at once while passing)."""
        if self.phase == PASSING:
            return [s for s, p in enumerate(self.passes) if not p]
        if self.phase in (PLAYING, MOON):
            return [self.turn]
        return []

    def legal_mask(self) -> int:
        """Mask of the cards the seat to play may play now (either pack)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal

    def _compute_legal(self) -> int:
        hand = self.hands[self.turn]
        trick = self.trick
        if not trick:
            if self.first_trick:
                return hand & (1 << self.first_lead_card)
            if self.broken:
                return hand
            # Hearts unbroken: anything but a heart (the QS included); a hand of nothing but
            # hearts may lead one.
            return (hand & ~HEARTS_MASK) or hand
        follow = hand & SUIT_MASK[(trick[0] % PACK) // 13]
        if follow:
            return follow
        if self.first_trick:
            return (hand & ~PENALTY_MASK) or hand
        return hand

    def legal_actions(self, seat: int) -> Sequence[Action]:
        """Every action `seat` may take now; empty when the game is not waiting for it."""
        phase = self.phase
        if phase == PLAYING:
            if seat != self.turn:
                return []
            m = self.legal_mask()
            m = (m & ONE_PACK) | (m >> PACK)
            out = []
            while m:
                low = m & -m
                out.append(PLAYS[low.bit_length() - 1])
                m ^= low
            return out
        if phase == PASSING:
            if not 0 <= seat < self.options.players or self.passes[seat]:
                return []
            return PassChoices(self.hands[seat])
        if phase == MOON and seat == self.shooter:
            return [MoonChoice(SUBTRACT), MoonChoice(ADD)]
        return []

    def hand_points(self) -> list[int]:
        """Points each seat has taken so far in this hand (penalty cards and the Omnibus bonus)."""
        return [self._points(m) for m in self.taken]

    def _points(self, mask: int) -> int:
        pts = (mask & HEARTS_MASK).bit_count() + 13 * (mask & QS_MASK).bit_count()
        if self.options.variant == OMNIBUS and mask >> parse_card(self.options.omnibus_card) & 1:
            pts -= 10
        return pts

    # -- applying actions ---------------------------------------------------------------

    def apply(self, seat: int, action: Action) -> tuple[State, list[Event]]:
        """Apply `seat`'s action; returns the new state and the events it caused.

        Raises EngineError (with a stable code) and leaves this state untouched when the
        action is not legal.
        """
        if type(seat) is not int or not 0 <= seat < self.options.players:
            raise EngineError(
                "invalid_seat", f"seat must be 0 to {self.options.players - 1}", seat=repr(seat)
            )
        kind = type(action)
        if kind is Play:
            return self._play(seat, action.card)  # type: ignore[attr-defined]
        if kind is Pass:
            return self._pass(seat, action.cards)  # type: ignore[attr-defined]
        if kind is MoonChoice:
            return self._moon(seat, action.choice)  # type: ignore[attr-defined]
        raise EngineError("invalid_action", f"not an action: {action!r}")

    def _wrong_phase(self, wanted: str) -> EngineError:
        if self.phase == GAME_OVER:
            return IllegalAction("game_over", "the game is over", phase=self.phase)
        return IllegalAction(
            "wrong_phase", f"cannot {wanted} now: the hand is in the {self.phase} phase", phase=self.phase
        )

    def _play(self, seat: int, card: int) -> tuple[State, list[Event]]:
        if self.phase != PLAYING:
            raise self._wrong_phase("play a card")
        if seat != self.turn:
            raise IllegalAction("not_your_turn", f"it is seat {self.turn}'s turn to play", turn=self.turn)
        if type(card) is not int or not 0 <= card < PACK:
            raise EngineError("invalid_card", f"{card!r} is not a card id", token=repr(card))
        hand = self.hands[seat]
        bit = 1 << card
        if not hand & bit:
            bit <<= PACK
            if not hand & bit:
                raise IllegalAction(
                    "card_not_in_hand", f"{_NAMES[card]} is not in your hand", card=_NAMES[card]
                )
            card += PACK
        if not self.legal_mask() & bit:
            raise self._illegal_play_reason(hand, card)
        new = self._copy()
        hands = list(self.hands)
        hands[seat] = hand ^ bit
        new.hands = tuple(hands)
        events = [Event("card_played", {"seat": seat, "card": _NAMES[card]})]
        if not self.broken and bit & PENALTY_MASK:
            new.broken = True
            events.append(Event("hearts_broken", {"seat": seat, "card": _NAMES[card]}))
        trick = (*self.trick, card)
        n = self.options.players
        if len(trick) < n:
            new.trick = trick
            new.turn = (seat + 1) % n
            events.append(Event("turn", {"seat": new.turn, "action": "play"}))
            return new, events
        new._finish_trick(trick, events)
        return new, events

    def _illegal_play_reason(self, hand: int, card: int) -> EngineError:
        name = _NAMES[card]
        if not self.trick:
            if self.first_trick:
                lead = _NAMES[self.first_lead_card]
                return IllegalAction(
                    "must_lead_lowest_club",
                    f"the first trick must be led with the {lead}",
                    card=name,
                    required=lead,
                )
            if hand & QS_MASK and not hand & ~(HEARTS_MASK | QS_MASK):
                msg = "hearts are not broken: with only hearts and the QS, lead the QS"
            else:
                msg = "hearts are not broken: lead another suit"
            return IllegalAction("hearts_not_broken", msg, card=name)
        led = (self.trick[0] % PACK) // 13
        if hand & SUIT_MASK[led]:
            suit = "CDSH"[led]
            return IllegalAction("must_follow_suit", f"you must follow suit ({suit})", card=name, suit=suit)
        return IllegalAction(
            "no_points_on_first_trick",
            "no hearts or QS on the first trick while you hold another card",
            card=name,
        )

    def _trick_winner(self, trick: tuple[int, ...]) -> int:
        """Index into the trick of the winning card, or -1 when every led-suit card cancelled."""
        led = (trick[0] % PACK) // 13
        if self.options.variant != CANCELLATION:
            best = -1
            win = 0
            for i, c in enumerate(trick):
                if c // 13 == led and c > best:
                    best, win = c, i
            return win
        base = [c % PACK for c in trick]
        best, win = -1, -1
        for i, c in enumerate(base):
            if c // 13 == led and c > best and base.count(c) == 1:
                best, win = c, i
        return win

    def _finish_trick(self, trick: tuple[int, ...], events: list[Event]) -> None:
        n = self.options.players
        leader = self.leader
        idx = self._trick_winner(trick)
        mask = 0
        for c in trick:
            mask |= 1 << c
        last = not self.hands[leader]
        if idx < 0 and not last:
            # Cancellation Hearts: nobody takes it now; the leader leads again.
            self.carried |= mask
            self.tricks = (*self.tricks, (leader, trick, -1))
            self.trick = ()
            self.turn = leader
            events.append(Event("trick_carried", {"leader": leader, "cards": names_of(trick)}))
            events.append(Event("turn", {"seat": leader, "action": "play"}))
            return
        winner = leader if idx < 0 else (leader + idx) % n
        won = mask | self.carried
        taken = list(self.taken)
        taken[winner] |= won
        self.taken = tuple(taken)
        self.carried = 0
        self.tricks = (*self.tricks, (leader, trick, winner))
        self.trick = ()
        events.append(
            Event(
                "trick_won",
                {
                    "seat": winner,
                    "trick": len(self.tricks),
                    "cards": names_of(trick),
                    "points": self._points(mask),
                    "hand_points": self._points(taken[winner]),
                },
            )
        )
        if last:
            self._end_of_hand(events)
        else:
            self.leader = self.turn = winner
            events.append(Event("turn", {"seat": winner, "action": "play"}))

    def _pass(self, seat: int, cards: tuple[int, ...]) -> tuple[State, list[Event]]:
        if self.phase != PASSING:
            raise self._wrong_phase("pass")
        if self.passes[seat]:
            raise IllegalAction("bad_pass", "you have already passed this hand", reason="already_passed")
        if len(cards) != PASS_COUNT:
            raise IllegalAction(
                "bad_pass", f"pass exactly {PASS_COUNT} cards, not {len(cards)}", reason="count"
            )
        if any(type(c) is not int or not 0 <= c < PACK for c in cards):
            raise EngineError("invalid_card", "a passed card is not a card id", token=repr(cards))
        if len(set(cards)) != PASS_COUNT:
            raise IllegalAction("bad_pass", "a pass cannot name a card twice", reason="duplicate")
        hand = self.hands[seat]
        mask = 0
        for c in cards:
            if not hand >> c & 1:
                raise IllegalAction(
                    "bad_pass", f"{_NAMES[c]} is not in your hand", reason="not_held", card=_NAMES[c]
                )
            mask |= 1 << c
        new = self._copy()
        passes = list(self.passes)
        passes[seat] = mask
        new.passes = tuple(passes)
        n = self.options.players
        target = (seat + pass_offset(self.options, self.hand_no)) % n
        events = [
            Event("pass_submitted", {"seat": seat}),
            Event("cards_passed", {"seat": seat, "to": target, "cards": names(mask)}, to=seat),
        ]
        if all(passes):
            new._resolve_passes(events)
        return new, events

    def _resolve_passes(self, events: list[Event]) -> None:
        n = self.options.players
        off = pass_offset(self.options, self.hand_no)
        hands = list(self.hands)
        received = [0] * n
        for s in range(n):
            hands[s] &= ~self.passes[s]
        for s in range(n):
            t = (s + off) % n
            received[t] = self.passes[s]
            hands[t] |= self.passes[s]
        self.hands = tuple(hands)
        self.received = tuple(received)
        events.append(Event("passes_complete", {}))
        for t in range(n):
            events.append(
                Event("cards_received", {"seat": t, "from": (t - off) % n, "cards": names(received[t])}, to=t)
            )
        self._begin_play(events)

    # -- scoring --------------------------------------------------------------------------

    def moon_shooter(self) -> int:
        """The seat that took every penalty card this hand, or -1."""
        penalties = self.in_play & PENALTY_MASK
        if not penalties:
            return -1
        for s, m in enumerate(self.taken):
            if m & penalties == penalties:
                return s
        return -1

    def _end_of_hand(self, events: list[Event]) -> None:
        shooter = self.moon_shooter()
        if shooter >= 0:
            self.phase = MOON
            self.shooter = self.leader = self.turn = shooter
            events.append(Event("moon_shot", {"seat": shooter, "choices": list(MOON_CHOICES)}))
            events.append(Event("turn", {"seat": shooter, "action": "moon"}))
            return
        self._score_hand(None, events)

    def moon_value(self) -> int:
        """Points a moon is worth: every penalty point of the hand (26, or 52 with two packs)."""
        return self._points_of_penalties(self.in_play & PENALTY_MASK)

    @staticmethod
    def _points_of_penalties(mask: int) -> int:
        return (mask & HEARTS_MASK).bit_count() + 13 * (mask & QS_MASK).bit_count()

    def _hand_row(self, choice: str | None) -> list[int]:
        pts = self.hand_points()
        if choice is None:
            return pts
        shooter, value = self.shooter, self.moon_value()
        # Penalty points are replaced by the moon; only the Omnibus bonus stays where it fell.
        row = [p - self._points_of_penalties(m) for p, m in zip(pts, self.taken, strict=True)]
        for s in range(len(row)):
            if choice == SUBTRACT and s == shooter:
                row[s] -= value
            elif choice == ADD and s != shooter:
                row[s] += value
        return row

    def _winners_if_over(self, totals: Sequence[int]) -> tuple[int, ...]:
        """The winners if the game ends with these totals after a hand, else ()."""
        if max(totals) < self.options.target_score:
            return ()
        low = min(totals)
        winners = tuple(s for s, t in enumerate(totals) if t == low)
        if len(winners) > 1 and self.options.tie_rule != SHARED:
            return ()
        return winners

    def _moon(self, seat: int, choice: str) -> tuple[State, list[Event]]:
        if self.phase != MOON:
            raise self._wrong_phase("choose a moon score")
        if seat != self.shooter:
            raise IllegalAction(
                "not_your_turn", f"seat {self.shooter} shot the moon and chooses", turn=self.shooter
            )
        if choice not in MOON_CHOICES:
            raise IllegalAction(
                "moon_choice_invalid",
                f"moon choice must be 'subtract' or 'add', got {choice!r}",
                choice=str(choice),
            )
        new = self._copy()
        events: list[Event] = [Event("moon_chosen", {"seat": seat, "choice": choice})]
        new._score_hand(choice, events)
        return new, events

    def default_moon_choice(self) -> str:
        """The choice made for a shooter who lets the clock run out (RULES.md): `add` when it ends
        the game with the shooter among the winners, otherwise `subtract`."""
        if self.phase != MOON:
            raise self._wrong_phase("choose a moon score")
        row = self._hand_row(ADD)
        totals = [t + p for t, p in zip(self.totals, row, strict=True)]
        return ADD if self.shooter in self._winners_if_over(totals) else SUBTRACT

    def _score_hand(self, choice: str | None, events: list[Event]) -> None:
        row = self._hand_row(choice)
        totals = tuple(t + p for t, p in zip(self.totals, row, strict=True))
        moon = None if choice is None else {"seat": self.shooter, "choice": choice}
        self.totals = totals
        self.sheet = (
            *self.sheet,
            {"hand": self.hand_no, "points": row, "totals": list(totals), "moon": moon},
        )
        self.history = (*self.history, self.hand_record(row, moon))
        events.append(
            Event("hand_scored", {"hand": self.hand_no, "points": row, "totals": list(totals), "moon": moon})
        )
        events.append(Event("hand_revealed", {"record": self.history[-1]}))
        winners = self._winners_if_over(totals)
        if winners:
            self.phase = GAME_OVER
            self.winners = winners
            self.leader = self.turn = self.shooter = -1
            events.append(
                Event("game_over", {"winners": list(winners), "totals": list(totals), "seed": self.seed})
            )
            return
        self._start_hand(self.hand_no + 1, events)

    def hand_record(self, row: list[int], moon: dict[str, Any] | None) -> dict[str, Any]:
        """The full record of the current hand, as revealed once it is over."""
        n = self.options.players
        off = pass_offset(self.options, self.hand_no)
        seed = hand_seed(self.seed, self.hand_no)
        return {
            "hand": self.hand_no,
            "seed": seed,
            "deal_commitment": seed_commitment(seed),
            "dealer": self.dealer,
            "pass_direction": pass_direction(self.options, self.hand_no),
            "dealt": [names(m) for m in self.dealt],
            "widow": names(self.widow),
            "passes": [{"to": (s + off) % n, "cards": names(self.passes[s])} for s in range(n)]
            if off
            else [],
            "tricks": [
                {
                    "leader": leader,
                    "cards": [{"seat": (leader + i) % n, "card": _NAMES[c]} for i, c in enumerate(cards)],
                    "winner": None if winner < 0 else winner,
                }
                for leader, cards, winner in self.tricks
            ],
            "taken_points": self.hand_points(),
            "moon": moon,
            "points": list(row),
            "totals": list(self.totals),
        }

    # -- comparison ---------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if type(other) is not State:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<State hand={self.hand_no} phase={self.phase} turn={self.turn} totals={self.totals}>"


def new_game(options: Options | None = None, seed: str | None = None) -> State:
    """A new game with its first hand dealt."""
    return State.new_game(options, seed)


def apply(state: State, seat: int, action: Action) -> tuple[State, list[Event]]:
    """Apply one action: the new state and the events it caused (the old state is unchanged)."""
    return state.apply(seat, action)


def replay(options: Options, seed: str, moves: Sequence[tuple[int, Action]]) -> State:
    """Rebuild a game from its seed and its move log."""
    state = State.new_game(options, seed)
    for seat, action in moves:
        state, _ = state.apply(seat, action)
    return state
