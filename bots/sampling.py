"""Dealing the cards a seat cannot see: worlds consistent with what the seat knows, for the strong and
expert bots at every table size, with one pack or two (Cancellation Hearts, where every card exists
twice and a face-down widow goes to the first trick's winner).

What a seat knows (`Knowledge`): its own hand, the cards it passed (still in the receiver's hand until
played) and received, every card played this hand and by whom, and what the plays show of the other
hands: a seat that did not follow suit holds none of that suit; a seat that led a heart before hearts
were broken held only hearts; a seat that threw a heart or the QS on the first trick (one pack) held
only hearts and the QS. The unseen cards are a multiset (with two packs a card may be unseen twice, or
once when its twin was played or is in this hand); they are dealt to the other seats' unknown places,
and to the widow, which no seat sees before the hand is over.

The deal is the simple weighted one: the most constrained cards first, each to a seat that may hold it
with probability proportional to the places it has left. A draw that the constraints leave no room for
returns None and the caller draws again; `sample_world` also replays the hand's plays in the engine, so
a world it returns is a legal history of this hand. Written here rather than taken from a library
because it works on the engine's own card ids and masks (no card-game library models this).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from games.engine import EngineError, Options, Pass, Play, State
from games.engine.cards import PACK, QS, card_ids, names_of, parse_cards
from games.engine.deal import cards_in_play, pass_offset

HEARTS, SPADES = 3, 2
ANY = (1 << PACK) - 1  # a slot that may hold any card (first-pack ids)
ONES = [1.0] * 16  # no inference: every slot's odds
SUIT_BITS = tuple(((1 << 13) - 1) << (13 * s) for s in range(4))
HEARTS_AND_QS = SUIT_BITS[HEARTS] | (1 << QS)
# The odds of the queen of spades being in a seat that passed up a chance to shed it, against a
# seat that did not (see `_queen_shedders`). Counted over 30 hands of four `strong` bots: of 102
# such seats seen from seat 0, 17 held the queen, where about a third would without the evidence.
QUEEN_ODDS = 0.35


@dataclass
class Knowledge:
    """What one seat knows of the hand in progress. Slots 0..n-1 are the seats, slot n the widow
    (Cancellation Hearts; it has no room with one pack). Cards are first-pack ids; a twin is listed
    twice."""

    options: Options
    me: int
    hand: list[int]
    played: list[list[int]]  # by seat, in play order
    sequence: list[tuple[int, int]]  # (seat, card) in play order: the hand's plays to replay
    allowed: list[int]  # by slot: mask of the first-pack ids it may hold (voids and the rest)
    known: list[list[int]]  # by seat: cards known to be in its hand now (this seat's pass, unplayed)
    unseen: list[int]  # the cards to deal, lowest first
    room: list[int]  # by slot: how many unseen cards it holds
    queen_odds: list[float]  # by slot: the weight of the queen of spades going there (1: no inference)


def knowledge(view: dict[str, Any], options: Options | None = None, infer: bool = False) -> Knowledge:
    """Everything `view` (one seat's view of a hand being played) tells about the hidden cards.
    With `infer` (one pack), also what the plays suggest rather than prove: a seat that let a
    chance to shed the queen of spades go by is less likely to hold it (`_queen_shedders`)."""
    options = options or Options.from_dict(view["options"])
    n, me = options.players, view["seat"]
    played: list[list[int]] = [[] for _ in range(n)]
    sequence: list[tuple[int, int]] = []
    allowed = [ANY] * (n + 1)
    broken, first = False, True
    tricks = [t for t in [*(t["cards"] for t in view["tricks"]), view["trick"]] if t]
    for trick in tricks:
        cards = parse_cards([entry["card"] for entry in trick])
        lead = cards[0] // 13
        if lead == HEARTS and not broken:  # only a hand of hearts may lead one before they break
            allowed[trick[0]["seat"]] &= SUIT_BITS[HEARTS]
        for entry, card in zip(trick, cards, strict=True):
            seat = entry["seat"]
            played[seat].append(card)
            sequence.append((seat, card))
            if card // 13 != lead:
                allowed[seat] &= ~SUIT_BITS[lead]
                if first and options.first_trick_rule and (card // 13 == HEARTS or card == QS):
                    allowed[seat] &= HEARTS_AND_QS  # points on the first trick: it held nothing else
        broken = broken or any(c // 13 == HEARTS or c == QS for c in cards)
        first = False
    queen_odds = [1.0] * (n + 1)
    if infer and not options.two_packs:
        for s in _queen_shedders(tricks, options, me):
            queen_odds[s] = QUEEN_ODDS
    hand = parse_cards(view["hand"])
    known: list[list[int]] = [[] for _ in range(n)]
    if view.get("my_pass") and view["my_pass"]["cards"]:
        target = view["my_pass"]["to"]
        shown = Counter(played[target])
        for card in parse_cards(view["my_pass"]["cards"]):
            if shown[card]:
                shown[card] -= 1
            else:
                known[target].append(card)
    left = Counter(hand)
    for cards in (*played, *known):
        left.update(cards)
    unseen = []
    for card in card_ids(cards_in_play(options)):  # lowest first, a twin twice
        if left[card]:
            left[card] -= 1
        else:
            unseen.append(card)
    room = [view["hand_sizes"][s] - len(known[s]) for s in range(n)]
    room[me] = 0
    room.append((view.get("widow") or {}).get("size", 0))
    if sum(room) != len(unseen):
        raise ValueError("the view's hand sizes do not match the cards unseen")
    return Knowledge(options, me, hand, played, sequence, allowed, known, unseen, room, queen_odds)


def _queen_shedders(tricks: list[list[dict[str, Any]]], options: Options, me: int) -> set[int]:
    """The other seats that passed up a safe chance to get rid of the queen of spades while it was
    out: one that was void in the suit led and threw another card (after the first trick, where the
    queen may not be thrown), or one that followed spades under the king or ace with a lower spade.
    Most players shed the queen there, so such a seat is less likely to hold it (`QUEEN_ODDS`).
    None once the queen has been played."""
    without: set[int] = set()
    for number, trick in enumerate(tricks):
        cards = parse_cards([entry["card"] for entry in trick])
        lead = cards[0] // 13
        best = -1
        for entry, card in zip(trick, cards, strict=True):
            if card == QS:
                return set()
            seat = entry["seat"]
            threw = card // 13 != lead and not (number == 0 and options.first_trick_rule)
            ducked = lead == SPADES and card // 13 == SPADES and card < QS < best
            if seat != me and (threw or ducked):
                without.add(seat)
            if card // 13 == lead:
                best = max(best, card)
    return without


def deal(k: Knowledge, rng: random.Random) -> list[list[int]] | None:
    """The unseen cards dealt among the slots (each seat's known cards first): one list per seat and
    the widow last; None when the constraints leave a card nowhere to go (draw again)."""
    slots = range(len(k.room))
    room = k.room.copy()
    allowed = k.allowed
    unseen = k.unseen.copy()
    rng.shuffle(unseen)
    # Most constrained cards first: a card few slots may hold goes before the others.
    unseen.sort(key=lambda c: sum(1 for s in slots if room[s] > 0 and allowed[s] >> c & 1))
    holding = [list(cards) for cards in k.known] + [[]]
    for card in unseen:
        seats = [s for s in slots if room[s] > 0 and allowed[s] >> card & 1]
        if not seats:
            return None
        odds = k.queen_odds if card == QS else ONES
        seat = rng.choices(seats, weights=[room[s] * odds[s] for s in seats])[0]
        holding[seat].append(card)
        room[seat] -= 1
    return holding


def sample_world(view: dict[str, Any], options: Options, rng: random.Random) -> State | None:
    """A full state of this hand: the seat's own cards as they are, the unseen cards dealt at random
    consistently with what it knows, this hand's pass and plays replayed in the engine. None if the
    draw contradicts the plays, so that the caller draws again."""
    return world(knowledge(view, options), view, rng)


def world(k: Knowledge, view: dict[str, Any], rng: random.Random) -> State | None:
    """One world drawn from `k` (the knowledge of `view`), replayed in the engine; None if the
    draw contradicts the plays."""
    holding = deal(k, rng)
    if holding is None:
        return None
    n, me, options = k.options.players, k.me, k.options
    holding[me] = list(k.hand)
    start = [holding[s] + k.played[s] for s in range(n)]  # each seat's cards once the pass was made
    number = view["hand_number"]
    offset = pass_offset(options, number)
    passes: list[list[int]] = []
    if offset:  # undo a pass consistent with what this seat knows, then let the engine redo it
        start, passes = _before_the_pass(view, start, offset, rng)
    try:
        state = State.from_deal(
            options,
            [names_of(sorted(h)) for h in start],
            widow=names_of(sorted(holding[n])),
            hand_number=number,
            seed="world",
        )
        for seat, cards in enumerate(passes):
            state.push(seat, Pass(tuple(cards)))
        for seat, card in k.sequence:
            state.push(seat, Play(card))
    except EngineError:
        return None
    return state


def _before_the_pass(
    view: dict[str, Any], after: list[list[int]], offset: int, rng: random.Random
) -> tuple[list[list[int]], list[list[int]]]:
    """Holdings before the pass, and each seat's pass, that lead to the holdings `after`: this
    seat's own pass and the cards it received are the real ones; every other seat is given
    three of its cards as the ones it received. (One pack only: two packs are never passed.)"""
    n, me = len(after), view["seat"]
    received: list[list[int]] = [[] for _ in range(n)]
    if view.get("received"):
        received[me] = parse_cards(view["received"]["cards"])
    if view.get("my_pass"):
        received[(me + offset) % n] = parse_cards(view["my_pass"]["cards"])
    for s in range(n):
        if not received[s]:
            received[s] = rng.sample(after[s], 3)
    passes = [received[(s + offset) % n] for s in range(n)]
    before = [[c for c in after[s] if c not in received[s]] + passes[s] for s in range(n)]
    return before, passes


class Redealer:
    """More worlds from one replayed world (`template`), fast: the unseen cards' bits (the other
    seats' hands and the widow, less the cards known to be held) are dealt again under the same
    constraints, which is all the rest of the hand depends on; no replay. Working on the template's
    bits keeps every bit in exactly one place, so twins stay two distinct cards."""

    def __init__(self, k: Knowledge, template: State) -> None:
        n, me = k.options.players, k.me
        self.me = me
        self.template = template
        self.known = [0] * n
        for s in range(n):
            for card in k.known[s]:
                bit = 1 << card
                if not template.hands[s] & bit or self.known[s] & bit:
                    bit <<= PACK
                self.known[s] |= bit
        self.room = k.room.copy()
        self.queen_odds = k.queen_odds if any(w != 1 for w in k.queen_odds) else None
        self.with_widow = self.room[n] > 0
        mask = template.widow if self.with_widow else 0
        for s in range(n):
            if s != me:
                mask |= template.hands[s] & ~self.known[s]
        self.unseen = [b for b in range(2 * PACK) if mask >> b & 1]  # bit indices, lowest first
        slots = range(n + 1)
        self.eligible = {
            b: [s for s in slots if self.room[s] > 0 and k.allowed[s] >> (b % PACK) & 1] for b in self.unseen
        }

    def redeal(self, rng: random.Random) -> State | None:
        """A copy of the template with the unseen cards dealt again; None when a card found no
        slot (draw again)."""
        template = self.template
        unseen = self.unseen
        rng.shuffle(unseen)
        eligible = self.eligible
        unseen.sort(key=lambda b: len(eligible[b]))  # the most constrained first (stable: random)
        room = self.room.copy()
        hands = [*self.known, 0]
        for b in unseen:
            seats = [s for s in eligible[b] if room[s]]
            if not seats:
                return None
            if len(seats) == 1:
                seat = seats[0]
            elif b == QS and self.queen_odds is not None:
                odds = self.queen_odds
                pick = rng.random() * sum(room[s] * odds[s] for s in seats)
                for seat in seats:
                    pick -= room[seat] * odds[seat]
                    if pick < 0:
                        break
            else:
                pick = rng.random() * sum(room[s] for s in seats)
                for seat in seats:
                    pick -= room[seat]
                    if pick < 0:
                        break
            hands[seat] |= 1 << b
            room[seat] -= 1
        widow = hands.pop()
        hands[self.me] = template.hands[self.me]
        world = template.copy()
        world.hands = hands
        world._legal = None
        if self.with_widow:
            old = template.widow
            world.widow = widow
            if world.carried & old:  # not taken yet: it travels with the trick
                world.carried = world.carried & ~old | widow
            else:
                world.taken = [m & ~old | widow if m & old else m for m in world.taken]
            # Only the union of the dealt hands and the widow is read while the hand goes on (the
            # cards in play): keep it whole now that the widow holds other bits.
            whole = old
            for m in template.dealt:
                whole |= m
            world.dealt = (whole, *([0] * (len(hands) - 1)))
        return world
