"""The game state and its transitions: legal actions, applying an action, scoring and game end."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from itertools import combinations
from types import MappingProxyType
from typing import Any, ClassVar, Final, NamedTuple

from .actions import ADD, MOON_CHOICES, SUBTRACT, SUIT_PLAYS, Action, MoonChoice, Pass, Play
from .cards import (
    BIT,
    HEARTS_MASK,
    NAMES,
    ONE_PACK,
    PACK,
    PENALTY_MASK,
    QS_MASK,
    SUIT_MASK,
    card_ids,
    card_name,
    names,
    parse_cards,
)
from .deal import cards_in_play, deal, deal_commitment, hand_seed, new_seed, pass_direction, pass_offset
from .errors import EngineError, IllegalAction
from .options import SHARED, Options
from .record import HandRecord, Lazy

PASSING: Final = "passing"
PLAYING: Final = "playing"
MOON: Final = "moon_choice"
GAME_OVER: Final = "game_over"
PASS_COUNT: Final = 3
_PC: Final = SUIT_PLAYS[0]
_PD: Final = SUIT_PLAYS[1]
_PS: Final = SUIT_PLAYS[2]
_PH: Final = SUIT_PLAYS[3]


class Event(NamedTuple):
    """Something an action caused; `to` is the one seat allowed to see it, or None for everyone."""

    type: str
    data: Mapping[str, Any]
    to: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}


_new_tuple = tuple.__new__


def _ev(type: str, data: Mapping[str, Any], to: int | None = None) -> Event:
    """Build an Event without the namedtuple constructor's extra call layer (events are built
    on every action of every simulation)."""
    return _new_tuple(Event, (type, data, to))


# Every (seat, card) pair has one card_played and one hearts_broken event, built once and
# shared: their data is read-only, so sharing is safe and playing a card allocates nothing.
_PLAYED: Final = tuple(
    tuple(_ev("card_played", MappingProxyType({"seat": s, "card": card_name(c)})) for c in range(PACK))
    for s in range(10)
)
_BROKEN: Final = tuple(
    tuple(_ev("hearts_broken", MappingProxyType({"seat": s, "card": card_name(c)})) for c in range(PACK))
    for s in range(10)
)


@cache
def _triples(n: int) -> tuple[tuple[int, int, int], ...]:
    return tuple((i, j, k) for i, j, k in combinations(range(n), PASS_COUNT))


class PassChoices(Sequence[Pass]):
    """Every legal pass of a hand, in lexicographic order, built on demand: a bot or a random
    player picks `choices[i]` without materialising all C(n, 3) passes."""

    __slots__ = ("_cards",)

    def __init__(self, hand: int) -> None:
        self._cards = card_ids(hand)

    def __len__(self) -> int:
        return len(_triples(len(self._cards)))

    def __getitem__(self, index: int) -> Pass:  # type: ignore[override]
        i, j, k = _triples(len(self._cards))[index]
        cards = self._cards
        return Pass((cards[i], cards[j], cards[k]))

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
    """One table's game.

    `apply` returns a new state and leaves this one untouched; `push` changes this state in
    place (what bots and simulations use, like OpenSpiel's `apply_action`). Either way an
    illegal action raises EngineError before anything changes.
    """

    FIELDS: ClassVar[tuple[str, ...]] = (
        "options",
        "seed",
        "table",
        "hand_no",
        "phase",
        "dealer",
        "hands",
        "dealt",
        "widow",
        "passes",
        "received",
        "leader",
        "turn",
        "trick",
        "tricks",
        "carried",
        "taken",
        "broken",
        "shooter",
        "totals",
        "sheet",
        "history",
        "winners",
    )
    __slots__ = (*FIELDS, "_legal")

    options: Options
    seed: str  # the game seed: secret until the game is over
    table: str  # the table's id, bound into each deal commitment ("" for a game with no table)
    hand_no: int  # 1, 2, 3 ...
    phase: str
    dealer: int
    hands: list[int]  # card masks (ids 52..103 are the second pack)
    dealt: tuple[int, ...]  # the hands as dealt, before passing
    widow: int
    passes: list[int]  # mask each seat passed this hand; 0 = not yet
    received: list[int]  # revealed only once every seat has passed
    leader: int  # -1 when nobody is on lead
    turn: int  # -1 while passing or after the game
    trick: list[int]  # cards of the trick in progress, in play order from the leader
    tricks: list[tuple[int, tuple[int, ...], int]]  # (leader, cards, winner or -1 when carried)
    carried: int  # cards waiting for the next trick winner: the widow, cancelled tricks
    taken: list[int]
    broken: bool
    shooter: int
    totals: list[int]
    sheet: list[dict[str, Any]]
    history: list[HandRecord]  # full records of finished hands
    winners: tuple[int, ...]
    _legal: int | None  # cache of the legal-play mask of the seat on turn

    # -- construction -------------------------------------------------------------------

    @classmethod
    def new_game(
        cls,
        options: Options | None = None,
        seed: str | None = None,
        events: list[Event] | None = None,
        table: str = "",
    ) -> State:
        """A new game, its first hand dealt from `seed` (a fresh secret seed when omitted); the
        deal's events are appended to `events` when given; `table` is bound into the commitments."""
        st = State._blank(options or Options(), seed, table)
        st._start_hand(st.options.first_hand, events if events is not None else [])
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
        n = options.players
        if len(hands) != n:
            raise EngineError("invalid_state", f"a deal needs {n} hands, got {len(hands)}")
        seen: dict[int, int] = {}
        masks = []
        for tokens in (*hands, widow):
            m = 0
            for c in parse_cards(tokens):
                copy = seen.get(c, 0)
                if copy >= (2 if options.two_packs else 1):
                    raise EngineError("invalid_state", f"{card_name(c)} is dealt too often")
                seen[c] = copy + 1
                m |= 1 << (c + copy * PACK)
            masks.append(m)
        if len({m.bit_count() for m in masks[:n]}) != 1:
            raise EngineError("invalid_state", "every seat must be dealt the same number of cards")
        all_cards = 0
        for m in masks:
            all_cards |= m
        if all_cards & ~cards_in_play(options):
            raise EngineError("invalid_state", "the deal holds a card removed for this player count")
        if not options.two_packs and not all_cards & SUIT_MASK[0]:
            raise EngineError("invalid_state", "a deal needs a club for the opening lead")
        if hand_number < 1 or (totals is not None and len(totals) != n):
            raise EngineError("invalid_state", "hand_number starts at 1 and totals need one entry per seat")
        st = State._blank(options, seed)
        if totals is not None:
            st.totals = list(totals)
        st._start_hand(hand_number, [], (tuple(masks[:n]), masks[n]))
        return st

    @staticmethod
    def _blank(options: Options, seed: str | None, table: str = "") -> State:
        st = State.__new__(State)
        st.options = options
        st.seed = seed if seed is not None else new_seed()
        st.table = table
        st.totals = [0] * options.players
        st.sheet = []
        st.history = []
        st.winners = ()
        return st

    def _start_hand(
        self, hand_no: int, events: list[Event], dealt: tuple[tuple[int, ...], int] | None = None
    ) -> None:
        opts = self.options
        n = opts.players
        hands, widow = dealt if dealt is not None else deal(opts, hand_seed(self.seed, hand_no))
        self.hand_no = hand_no
        self.dealer = (hand_no - 1) % n
        self.hands = list(hands)
        self.dealt = hands
        self.widow = widow
        self.passes = [0] * n
        self.received = [0] * n
        self.trick = []
        self.tricks = []
        # The widow travels with the first trick's cards (and with them if that trick is carried).
        self.carried = widow
        self.taken = [0] * n
        self.broken = False
        self.shooter = -1
        self._legal = None
        started = Lazy(_hand_started, self.seed, hand_no, self.dealer, opts, self.table)
        events.append(_ev("hand_started", started))
        for s in range(n):
            events.append(_ev("cards_dealt", Lazy(_cards_data, hand_no, s, hands[s]), s))
        if pass_offset(opts, hand_no):
            self.phase = PASSING
            self.leader = self.turn = -1
        else:
            self._begin_play()

    def _begin_play(self) -> None:
        self.phase = PLAYING
        if self.options.two_packs:
            lead = (self.dealer + 1) % self.options.players
        else:
            bit = 1 << self.first_lead_card
            lead = next(s for s, h in enumerate(self.hands) if h & bit)
        self.leader = self.turn = lead

    def copy(self) -> State:
        """An independent copy (what `apply` builds on); cheap: cards are ints, lists are short."""
        new = State.__new__(State)
        new.options = self.options
        new.seed = self.seed
        new.table = self.table
        new.hand_no = self.hand_no
        new.phase = self.phase
        new.dealer = self.dealer
        new.hands = self.hands.copy()
        new.dealt = self.dealt
        new.widow = self.widow
        new.passes = self.passes.copy()
        new.received = self.received.copy()
        new.leader = self.leader
        new.turn = self.turn
        new.trick = self.trick.copy()
        new.tricks = self.tricks.copy()
        new.carried = self.carried
        new.taken = self.taken.copy()
        new.broken = self.broken
        new.shooter = self.shooter
        new.totals = self.totals.copy()
        new.sheet = self.sheet.copy()
        new.history = self.history.copy()
        new.winners = self.winners
        new._legal = self._legal
        return new

    # -- queries ------------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        return self.phase == GAME_OVER

    @property
    def first_trick(self) -> bool:
        """True while the first trick is being played and the first-trick rules apply."""
        return not self.tricks and self.options.first_trick_rule

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

    def to_act(self) -> list[int]:
        """Seats whose action the game is waiting for (several at once while passing)."""
        phase = self.phase
        if phase == PLAYING or phase == MOON:  # noqa: SIM109 - two compares beat building a tuple
            return [self.turn]
        if phase == PASSING:
            return [s for s, p in enumerate(self.passes) if not p]
        return []

    def legal_mask(self) -> int:
        """Mask of the cards the seat on turn may play now (either pack)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal

    def _compute_legal(self) -> int:
        hand = self.hands[self.turn]
        trick = self.trick
        if not trick:
            if not self.tricks and self.options.first_trick_rule:
                return hand & (1 << self.first_lead_card)
            if self.broken:
                return hand
            # Hearts unbroken: anything but a heart (the QS included); a hand of nothing but
            # hearts may lead one.
            return (hand & ~self.options.hearts_mask) or hand
        follow = hand & self.options.suit_masks[(trick[0] % PACK) // 13]
        if follow:
            return follow
        if not self.tricks and self.options.first_trick_rule:
            return (hand & ~self.options.penalty_mask) or hand
        return hand

    def legal_actions(self, seat: object) -> Sequence[Action]:
        """Every action `seat` may take now; empty when the game is not waiting for it."""
        phase = self.phase
        if phase == PLAYING:
            if seat != self.turn:
                return ()
            m = self._legal
            if m is None:
                m = self._legal = self._compute_legal()
            if m > ONE_PACK:
                m = (m & ONE_PACK) | (m >> PACK)
            return _PC[m & 0x1FFF] + _PD[m >> 13 & 0x1FFF] + _PS[m >> 26 & 0x1FFF] + _PH[m >> 39]
        if phase == PASSING:
            if type(seat) is not int or not 0 <= seat < self.options.players or self.passes[seat]:
                return ()
            return PassChoices(self.hands[seat])
        if phase == MOON and seat == self.shooter:
            return (MoonChoice(SUBTRACT), MoonChoice(ADD))
        return ()

    def hand_points(self) -> list[int]:
        """Points each seat has taken so far in this hand (penalty cards and the Omnibus bonus)."""
        return [self.points_of(m) for m in self.taken]

    def points_of(self, mask: int) -> int:
        o = self.options
        pts = (mask & o.hearts_mask).bit_count() + 13 * (mask & o.queens_mask).bit_count()
        if mask & o.bonus_mask:
            pts -= 10
        return pts

    # -- applying actions ---------------------------------------------------------------

    def apply(self, seat: object, action: object) -> tuple[State, list[Event]]:
        """Apply `seat`'s action to a copy: the new state and the events it caused."""
        new = self.copy()
        return new, new.push(seat, action)

    def push(self, seat: object, action: object) -> list[Event]:
        """Apply `seat`'s action to this state in place; returns the events it caused.

        Raises EngineError (with a stable code) before changing anything when the action is
        not legal here.
        """
        if action.__class__ is not Play:
            who = self._check_seat(seat)
            if isinstance(action, Pass):
                return self._pass(who, action.cards)
            if isinstance(action, MoonChoice):
                return self._moon(who, action.choice)
            raise EngineError("invalid_action", f"not an action: {action!r}")
        # Playing a card is the hot path of every simulation, so it is written out here.
        if seat.__class__ is not int or self.phase != PLAYING or seat != self.turn:
            self._check_seat(seat)
            if self.phase != PLAYING:
                raise self._wrong_phase("play a card")
            raise IllegalAction("not_your_turn", f"it is seat {self.turn}'s turn to play", turn=self.turn)
        card: int = action.card
        turn = self.turn  # the seat passed in, now known to be an int
        hands = self.hands
        hand = hands[turn]
        bit = 1 << card
        if not hand & bit:
            bit <<= PACK
            if not hand & bit:
                name = NAMES[card]
                raise IllegalAction("card_not_in_hand", f"{name} is not in your hand", card=name)
            card += PACK
        legal = self._legal
        if legal is None:
            legal = self._compute_legal()
        if not legal & bit:
            raise self._illegal_play_reason(hand, card)
        self._legal = None
        hands[turn] = hand ^ bit
        events = [_PLAYED[turn][card % PACK]]
        if bit & self.options.penalty_mask and not self.broken:
            self.broken = True
            events.append(_BROKEN[turn][card % PACK])
        trick = self.trick
        trick.append(card)
        n = self.options.players
        if len(trick) < n:
            self.turn = (turn + 1) % n
        else:
            self._finish_trick(events)
        return events

    def _check_seat(self, seat: object) -> int:
        if type(seat) is not int or not 0 <= seat < self.options.players:
            raise EngineError(
                "invalid_seat", f"seat must be 0 to {self.options.players - 1}", seat=repr(seat)
            )
        return seat

    def _wrong_phase(self, wanted: str) -> EngineError:
        if self.phase == GAME_OVER:
            return IllegalAction("game_over", "the game is over", phase=self.phase)
        return IllegalAction(
            "wrong_phase", f"cannot {wanted} now: the hand is in the {self.phase} phase", phase=self.phase
        )

    def _illegal_play_reason(self, hand: int, card: int) -> EngineError:
        name = NAMES[card]
        if not self.trick:
            if self.first_trick:
                lead = NAMES[self.first_lead_card]
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

    def _cancellation_winner(self, trick: list[int]) -> int:
        """Index of the highest uncancelled card of the led suit, or -1 when all cancelled."""
        base = [c % PACK for c in trick]
        low = base[0] // 13 * 13
        best, win = -1, -1
        for i, c in enumerate(base):
            if low <= c < low + 13 and c > best and base.count(c) == 1:
                best, win = c, i
        return win

    def _finish_trick(self, events: list[Event]) -> None:
        trick = self.trick
        self.trick = []
        leader = self.leader
        mask = sum(map(BIT.__getitem__, trick))
        if self.options.two_packs:
            idx = self._cancellation_winner(trick)
        else:
            # One pack: the highest card of the led suit is the highest set bit of that suit.
            idx = trick.index((mask & self.options.suit_masks[trick[0] // 13]).bit_length() - 1)
        last = not self.hands[leader]
        cards = tuple(trick)
        if idx < 0 and not last:
            # Cancellation Hearts: nobody takes it now; the leader leads again.
            self.carried |= mask
            self.tricks.append((leader, cards, -1))
            self.turn = leader
            events.append(_ev("trick_carried", {"leader": leader, "cards": [NAMES[c] for c in cards]}))
            return
        winner = leader if idx < 0 else (leader + idx) % self.options.players
        self.taken[winner] |= mask | self.carried
        self.carried = 0
        tricks = self.tricks
        tricks.append((leader, cards, winner))
        data = {
            "seat": winner,
            "trick": len(tricks),
            "cards": [NAMES[c] for c in cards],
            "points": self.points_of(mask) if mask & self.options.scoring_mask else 0,
        }
        events.append(_new_tuple(Event, ("trick_won", data, None)))
        if last:
            self._end_of_hand(events)
        else:
            self.leader = self.turn = winner

    def _pass(self, seat: int, cards: tuple[int, ...]) -> list[Event]:
        if self.phase != PASSING:
            raise self._wrong_phase("pass")
        passes = self.passes
        if passes[seat]:
            raise IllegalAction("bad_pass", "you have already passed this hand", reason="already_passed")
        if len(cards) != PASS_COUNT:
            raise IllegalAction(
                "bad_pass", f"pass exactly {PASS_COUNT} cards, not {len(cards)}", reason="count"
            )
        mask = sum(map(BIT.__getitem__, set(cards)))
        if mask.bit_count() != PASS_COUNT:
            raise IllegalAction("bad_pass", "a pass cannot name a card twice", reason="duplicate")
        missing = mask & ~self.hands[seat]
        if missing:
            name = NAMES[(missing & -missing).bit_length() - 1]
            raise IllegalAction("bad_pass", f"{name} is not in your hand", reason="not_held", card=name)
        passes[seat] = mask
        target = (seat + pass_offset(self.options, self.hand_no)) % self.options.players
        events = [
            _ev("pass_submitted", {"seat": seat}),
            _ev("cards_passed", Lazy(_passed_data, seat, target, mask), seat),
        ]
        if all(passes):
            self._resolve_passes(events)
        return events

    def _resolve_passes(self, events: list[Event]) -> None:
        n = self.options.players
        off = pass_offset(self.options, self.hand_no)
        hands, passes, received = self.hands, self.passes, self.received
        for s in range(n):
            hands[s] &= ~passes[s]
        for s in range(n):
            t = (s + off) % n
            received[t] = passes[s]
            hands[t] |= passes[s]
        events.append(_ev("passes_complete", {}))
        for t in range(n):
            events.append(_ev("cards_received", Lazy(_received_data, t, (t - off) % n, received[t]), t))
        self._legal = None
        self._begin_play()

    # -- scoring --------------------------------------------------------------------------

    def moon_shooter(self) -> int:
        """The seat that took every penalty card of this hand, or -1."""
        penalties = self.in_play & PENALTY_MASK
        if penalties:
            for s, m in enumerate(self.taken):
                if m & penalties == penalties:
                    return s
        return -1

    def _end_of_hand(self, events: list[Event]) -> None:
        shooter = self.moon_shooter()
        if shooter >= 0:
            self.phase = MOON
            self.shooter = self.leader = self.turn = shooter
            events.append(_ev("moon_shot", {"seat": shooter, "choices": list(MOON_CHOICES)}))
            return
        self._score_hand(None, events)

    def moon_value(self) -> int:
        """Points a moon is worth: every penalty point of the hand (26, or 52 with two packs)."""
        return _penalty_points(self.in_play & PENALTY_MASK)

    def _hand_row(self, choice: str | None) -> list[int]:
        pts = self.hand_points()
        if choice is None:
            return pts
        shooter, value = self.shooter, self.moon_value()
        # Penalty points are replaced by the moon; only the Omnibus bonus stays where it fell.
        row = [p - _penalty_points(m) for p, m in zip(pts, self.taken, strict=True)]
        for s in range(len(row)):
            if choice == SUBTRACT and s == shooter:
                row[s] -= value
            elif choice == ADD and s != shooter:
                row[s] += value
        return row

    def _winners_if_over(self, totals: Sequence[int]) -> tuple[int, ...]:
        """The winners if the game ends with these totals after a hand, else (). A game of a fixed
        number of hands (option `hands`) ends after its last one, a tie for the lowest total shared."""
        opts = self.options
        last = opts.hands and self.hand_no >= opts.first_hand + opts.hands - 1
        if max(totals) < opts.target_score and not last:
            return ()
        low = min(totals)
        winners = tuple(s for s, t in enumerate(totals) if t == low)
        if len(winners) > 1 and opts.tie_rule != SHARED and not last:
            return ()
        return winners

    def _moon(self, seat: int, choice: str) -> list[Event]:
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
        events: list[Event] = [_ev("moon_chosen", {"seat": seat, "choice": choice})]
        self._score_hand(choice, events)
        return events

    def default_moon_choice(self) -> str:
        """The choice made for a shooter who lets the clock run out (docs/rules.md): `add` when it ends
        the game with the shooter among the winners, otherwise `subtract`."""
        if self.phase != MOON:
            raise self._wrong_phase("choose a moon score")
        row = self._hand_row(ADD)
        totals = [t + p for t, p in zip(self.totals, row, strict=True)]
        return ADD if self.shooter in self._winners_if_over(totals) else SUBTRACT

    def _score_hand(self, choice: str | None, events: list[Event]) -> None:
        row = self._hand_row(choice)
        totals = self.totals = [t + p for t, p in zip(self.totals, row, strict=True)]
        moon = None if choice is None else {"seat": self.shooter, "choice": choice}
        self.sheet.append({"hand": self.hand_no, "points": list(row), "totals": list(totals), "moon": moon})
        record = self.hand_record(row, moon)
        self.history.append(record)
        events.append(
            _ev("hand_scored", {"hand": self.hand_no, "points": row, "totals": list(totals), "moon": moon})
        )
        events.append(_ev("hand_revealed", Lazy(_revealed, record)))
        winners = self._winners_if_over(totals)
        if winners:
            self.phase = GAME_OVER
            self.winners = winners
            self.leader = self.turn = self.shooter = -1
            self._legal = None
            events.append(
                _ev("game_over", {"winners": list(winners), "totals": list(totals), "seed": self.seed})
            )
            return
        self._start_hand(self.hand_no + 1, events)

    def hand_record(self, row: list[int], moon: dict[str, Any] | None) -> HandRecord:
        """The full record of the current hand, as revealed once it is over."""
        off = pass_offset(self.options, self.hand_no)
        return HandRecord(
            (
                self.seed,
                self.hand_no,
                self.dealer,
                pass_direction(self.options, self.hand_no),
                off,
                self.dealt,
                self.widow,
                tuple(self.passes) if off else (),
                tuple(self.tricks),
                self.hand_points(),
                moon,
                list(row),
                list(self.totals),
                self.table,
            )
        )

    # -- comparison ---------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if type(other) is not State:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<State hand={self.hand_no} phase={self.phase} turn={self.turn} totals={self.totals}>"


def _hand_started(game_seed: str, hand: int, dealer: int, options: Options, table: str) -> dict[str, Any]:
    return {
        "hand": hand,
        "dealer": dealer,
        "pass_direction": pass_direction(options, hand),
        "deal_commitment": deal_commitment(game_seed, hand, table),
    }


def _revealed(record: HandRecord) -> dict[str, Any]:
    return {"record": dict(record)}


def _cards_data(hand: int, seat: int, mask: int) -> dict[str, Any]:
    return {"hand": hand, "seat": seat, "cards": names(mask)}


def _passed_data(seat: int, target: int, mask: int) -> dict[str, Any]:
    return {"seat": seat, "to": target, "cards": names(mask)}


def _received_data(seat: int, source: int, mask: int) -> dict[str, Any]:
    return {"seat": seat, "from": source, "cards": names(mask)}


def _penalty_points(mask: int) -> int:
    return (mask & HEARTS_MASK).bit_count() + 13 * (mask & QS_MASK).bit_count()


def new_game(options: Options | None = None, seed: str | None = None) -> State:
    """A new game with its first hand dealt."""
    return State.new_game(options, seed)


def apply(state: State, seat: int, action: Action) -> tuple[State, list[Event]]:
    """Apply one action: the new state and the events it caused (the old state is unchanged)."""
    return state.apply(seat, action)


def replay(options: Options, seed: str, moves: Sequence[tuple[int, Action]], table: str = "") -> State:
    """Rebuild a game from its seed and its move log."""
    state = State.new_game(options, seed, table=table)
    for seat, action in moves:
        state.push(seat, action)
    return state
