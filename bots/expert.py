"""The expert level: search over worlds sampled from the seat's view (Information Set Monte Carlo
Tree Search, the root played on common worlds), with rollouts and a pass that know the moon.

Rollouts (`smart_card`, `ROLLOUT`): the strong level's rules refined by the cards still out, as
the table has seen them (the queen flushed with low spades, the safest lead, the highest card shed
on a clean last trick, the queen and the spades above it shed first, the Omnibus bonus taken and
kept). Against strong at 300 iterations they were worth 0.58 points per hand (bench/HISTORY.md).

Worlds (bots/sampling.py, at every table size and with two packs): the first determinization is
drawn and the hand so far replayed in the engine; the others deal the unseen cards again among the
other seats' current holdings (and the widow, with two packs) under the same constraints (their
numbers of cards, the voids they have shown, the cards this seat passed that are still out), which
is all the rest of the hand depends on. With two packs the rollouts apply the cancellation rule
(twins cancel), and the moon attempt is not searched (all 26 hearts and both queens).

Search (`_search`): every legal card is played in the same worlds (common random
numbers), in rounds of sequential halving that drop the worse half of the cards after each round,
so the budget goes to the close choices. Below the root one tree is shared by all worlds (single
observer ISMCTS): nodes are keyed by the cards played, the other seats play the fast rule-based
policy, and this seat's later cards are chosen by UCB1 with availability counts once their node
has been reached EXPAND_AT times (the policy's card before that). Each iteration plays the hand
out and scores each seat by its points against the mean of the others, so a moon is valued as the
rule scores it (the shooter 26 ahead of everyone). The textbook SO-ISMCTS (UCB1 at every node,
every seat's choices in the tree) measured worse (bench/HISTORY.md) and is no longer kept.

Moon:
- defence: in the tree and the rollouts, a seat that alone holds the penalty cards taken so far,
  with at least THREAT_HEARTS hearts, is shooting: the others take a trick from it when they can
  and throw it no points, and it plays to win every trick;
- attempt: when no other seat has taken a point and the hand is strong at the top (a cheap
  filter), ATTEMPT_SHARE of the budget runs the same search with this seat's rollouts shooting
  from now on against defending opponents; the better plan's card is played;
- the pass: `basic`'s pass and its neighbours (any three of the five cards it ranks most
  dangerous, and the three lowest) are each played out in the same sampled deals, the low pass
  also as a moon attempt; the best mean is passed. The moon choice is `basic`'s (the engine's
  timeout rule: add only when that ends the game with this seat winning).

Effort is a number of iterations (rollouts) by default, so a seed replays the same decision:
ITERATIONS per card and per pass by default, or the HEARTS_EXPERT_ITERATIONS environment variable:
PLAY_ITERATIONS is the setting for up to about a second per move in play. Going from 150 to 300
iterations bought a measured 0.4 points per hand against strong, and from 300 to 600 about 0.35
more (bench/HISTORY.md). The default, 1,200, is faster compiled (mypyc, setup.py: about 70 ms a
move) than 600 were interpreted (about 100 ms); interpreted it takes about three times as long.
A table may give its bots a thinking time instead (`bot_think_ms`): then `deadline` replaces the
budget, and each round of the search takes its share of the time left, checked between worlds;
such decisions depend on the machine's speed, so only a fixed budget replays exactly.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import time
from typing import Any

from bots.basic import choose_pass as basic_pass
from bots.basic import danger, rank_of
from bots.sampling import Redealer, knowledge, world
from bots.strong import HEART_BITS, PENALTY_BITS, SUITS, fast_card, trick_winner
from games.engine import PLAYING, Options, Pass, Play, State
from games.engine.cards import ONE_PACK, PACK, QS, card_ids, names, parse_cards
from games.engine.deal import cards_in_play

ITERATIONS = 1200  # the default budget: search iterations per card played (bench/README.md)
PLAY_ITERATIONS = 6000  # a setting for up to a second per move in play (HEARTS_EXPERT_ITERATIONS)
UCB_C = 0.7  # exploration, on rewards in units of 26 points
THREAT_HEARTS = 7  # a seat alone to hold penalty cards, this many hearts among them, is shooting
ATTEMPT_SHARE = 0.3  # budget share of the shooting search, when the hand allows an attempt
SHOOT_MARGIN = 0.05  # how much better (x 26 points) the attempt must look: its search is smaller
EXPAND_AT = 8  # visits before a node below the root grows children and this seat searches there
INFER = False  # worlds also follow what the plays suggest of the queen (bots.sampling.knowledge)
PASS_SHARE = 1  # the pass is played out this many times the budget of a card, in rollouts

HEARTS, SPADES = 3, 2
_UNBOUNDED = 1 << 40  # the budget of a search bounded by a deadline instead


def iterations() -> int:
    """The budget per decision: HEARTS_EXPERT_ITERATIONS when set (a whole number, at least 1:
    anything else is refused, as the service's settings refuse it at start-up), else ITERATIONS."""
    value = os.environ.get("HEARTS_EXPERT_ITERATIONS", "").strip()
    if not value:
        return ITERATIONS
    if not value.isdecimal() or int(value) < 1:
        raise ValueError(
            f"HEARTS_EXPERT_ITERATIONS={value!r} is not valid: expected a whole number of at least 1"
        )
    return int(value)


class _Node:
    __slots__ = ("avail", "children", "reward", "seat", "visits")

    def __init__(self, seat: int) -> None:
        self.seat = seat  # who made the move into this node
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.reward = 0.0


def choose_play(
    view: dict[str, Any], rng: random.Random, budget: int | None = None, deadline: float | None = None
) -> str | None:
    """The card to play, or None when search does not apply (one legal card, or no world
    consistent with the view could be drawn). With `deadline` (a `time.monotonic()` instant) the
    search runs until then instead of for `budget` iterations."""
    legal = view["legal_actions"]
    if legal is None or legal["type"] != "play":
        return None
    cards = sorted(set(parse_cards(legal["cards"])))
    if len(cards) == 1:
        return names(1 << cards[0])[0]
    options = Options.from_dict(view["options"])
    budget = iterations() if budget is None else budget
    me = view["seat"]
    attempt = not options.two_packs and _can_attempt(view, cards)
    shoot_budget = int(budget * ATTEMPT_SHARE) if attempt else 0
    worlds = _Worlds(view, options, rng)
    plain_until = None
    if deadline is not None:  # the attempt, if any, takes its share of the time as of the budget
        now = time.monotonic()
        plain_until = now + max(0.0, deadline - now) * (1 - ATTEMPT_SHARE if attempt else 1)
    plain = _search(worlds, me, cards, budget - shoot_budget, rng, shooting=False, deadline=plain_until)
    if plain is None:
        return None
    best, value = plain
    if shoot_budget:
        shot = _search(worlds, me, cards, shoot_budget, rng, shooting=True, deadline=deadline)
        if shot is not None and shot[1] > value + SHOOT_MARGIN:
            best = shot[0]
    return names(1 << best)[0]


class _Worlds:
    """Determinizations of the view (bots/sampling.py). The first is a world replayed in the
    engine, so it is a consistent State; the others copy it and deal the unseen cards again among
    the other seats' current holdings (and the widow, with two packs), with the same constraints
    (each seat's number of cards, the voids it has shown, the cards this seat passed it that it
    has not played), which is all a world's future depends on and costs a fraction of a replay."""

    def __init__(self, view: dict[str, Any], options: Options, rng: random.Random) -> None:
        self.rng = rng
        self.template: State | None = None
        known = knowledge(view, options, infer=INFER)
        for _ in range(20):
            self.template = world(known, view, rng)
            if self.template is not None:
                break
        self.redealer = None if self.template is None else Redealer(known, self.template)
        self.pool: list[State] = []

    def get(self, i: int, size: int) -> State | None:
        """World i: a new one while i < size, then the pool again in turn."""
        if self.template is None or self.redealer is None:
            return None
        if i < size:
            for _ in range(10):
                drawn = self.redealer.redeal(self.rng)
                if drawn is not None:
                    self.pool.append(drawn)
                    return drawn
        return self.pool[i % len(self.pool)] if self.pool else self.template


def _search(
    worlds: _Worlds,
    me: int,
    cards: list[int],
    budget: int,
    rng: random.Random,
    *,
    shooting: bool,
    deadline: float | None = None,
) -> tuple[int, float] | None:
    """ISMCTS with the root played flat: every card still in the running is tried in the same
    worlds (common random numbers), and after each round the worse half is dropped (sequential
    halving). Below the root one tree is shared by all worlds: the other seats play the fast
    policy, and this seat's later choices are made by UCB1 once their node has been reached
    EXPAND_AT times (the policy's card before that). With `deadline`, each round takes its share
    of the time left instead of the budget (at least one world a round), checked between worlds."""
    root = {c: _Node(me) for c in cards}
    alive = list(cards)
    rounds = max(1, math.ceil(math.log2(len(cards))))
    if deadline is not None:
        budget = _UNBOUNDED
    used = w = 0
    for r in range(rounds):
        share = (budget - used) // (rounds - r)
        round_end = math.inf
        if deadline is not None:
            now = time.monotonic()
            round_end = now + max(0.0, deadline - now) / (rounds - r)
        for k in range(max(1, share // len(alive))):
            if k and time.monotonic() >= round_end:
                break
            world = worlds.get(w, budget)
            if world is None:
                return None
            w += 1
            for card in alive:
                if used == budget:
                    break
                used += 1
                state = world.copy()
                state.push(me, Play(card))
                _descend(state, root[card], me, me if shooting else -1)
        if len(alive) > 1:
            alive.sort(key=lambda c: (-root[c].reward / max(root[c].visits, 1), c))
            alive = alive[: max(1, (len(alive) + 1) // 2)]
        if used == budget:
            break
    best = max(alive, key=lambda c: (root[c].reward / max(root[c].visits, 1), -c))
    return best, root[best].reward / max(root[best].visits, 1)


def _descend(state: State, root: _Node, me: int, shooter: int) -> None:
    """One iteration below the root: walk and grow the tree, play out, back the rewards up."""
    path = [root]
    node: _Node | None = root  # None once the walk leaves the tree
    threat = shooter
    while state.trick or state.hands[state.turn].bit_count() > 1:  # the last trick: _finish
        if not state.trick and shooter < 0:
            threat = _threat(state)
        seat = state.turn
        if seat == me and node is not None and node.visits >= EXPAND_AT:
            legal = _legal_ids(state)
            children = node.children
            untried = [c for c in legal if c not in children]
            if untried:
                policy = _policy(state, threat) if threat >= 0 else ROLLOUT(state)
                card = policy if policy in untried else untried[0]
                children[card] = _Node(seat)
            else:
                card = _ucb_pick(children, legal)
        else:
            card = _policy(state, threat) if threat >= 0 else ROLLOUT(state)
        if node is not None:
            child = node.children.get(card)
            if child is None and node.visits >= EXPAND_AT:
                child = node.children[card] = _Node(seat)
            node = child
            if node is not None:
                path.append(node)
        state.push(seat, Play(card))
    rewards = _rewards(_finish(state, shooter))
    for n in path:
        n.visits += 1
        n.reward += rewards[n.seat]


HIGH_SPADE_BITS = (1 << (QS + 1)) | (1 << (QS + 2))  # the king and ace of spades
QS_BIT = 1 << QS


def smart_card(state: State) -> int:
    """The expert's rollout policy: the `fast_card` rules refined by what the table has seen (the
    cards still out, counted from the tricks taken and the trick in progress; never another seat's
    hand). A lead is the card the fewest outstanding cards can duck under, from the suit the others
    still hold most of, spades first to flush the queen when this seat holds no spade above the
    jack; the last seat to a clean trick wins it with its highest card rather than keep it; a
    discard is the queen, then the ace and king of spades while the queen is out, then the card
    most worth shedding (high hearts, high cards of short suits). Two packs: `fast_card`."""
    if state.options.two_packs:
        return fast_card(state)
    seat = state.turn
    hand = state.hands[seat]
    legal = state.legal_mask()
    trick = state.trick
    played = 0
    for m in state.taken:
        played |= m
    in_trick = 0
    for c in trick:
        in_trick |= 1 << c
    out = state.in_play & ~(played | in_trick | hand)
    queen_out = bool(out & QS_BIT)
    if not trick:
        return _smart_lead(legal, hand, out, queen_out)
    suit = SUITS[trick[0] // 13]
    follow = legal & suit
    last = len(trick) == state.options.players - 1
    if follow:
        best = (in_trick & suit).bit_length() - 1
        clean = not in_trick & PENALTY_BITS
        if in_trick & state.options.bonus_mask and state.points_of(in_trick) < 0:
            top = follow.bit_length() - 1
            if top > best and (top != QS or last):
                return top  # Omnibus: take the bonus card while the trick is worth it
        if last and clean and suit != SUITS[HEARTS]:
            plain = follow & ~QS_BIT
            if plain:
                return plain.bit_length() - 1  # the trick is safe: shed the highest card
        under = follow & ((1 << best) - 1)
        if under:
            return under.bit_length() - 1
        if last:
            plain = follow & ~QS_BIT
            return plain.bit_length() - 1 if plain else QS
        return (follow & -follow).bit_length() - 1
    if legal & QS_BIT:
        return QS
    if queen_out:
        for wanted in (QS + 2, QS + 1):
            if legal >> wanted & 1:
                return wanted
    best_card, best_score = -1, -1
    shed = legal & ~state.options.bonus_mask or legal  # Omnibus: keep the bonus card
    for s in range(4):
        m = shed & SUITS[s]
        if not m:
            continue
        c = m.bit_length() - 1
        rank = c % 13
        score = rank + (4 if s == HEARTS else 0) + (3 if (hand & SUITS[s]).bit_count() <= 2 else 0)
        if score > best_score:
            best_card, best_score = c, score
    return best_card


def _smart_lead(legal: int, hand: int, out: int, queen_out: bool) -> int:
    """The lead of `smart_card`: the lowest card of the suit scored safest."""
    best_card, best_score = -1, math.inf
    for s in range(4):
        m = legal & SUITS[s]
        if not m:
            continue
        c = (m & -m).bit_length() - 1
        others = out & SUITS[s]
        # Fewest cards out that can duck under it, in a suit the others hold many of; nobody else
        # holding the suit is the worst: the lead wins and the others shed on it.
        score = 2.0 * (others & ((1 << c) - 1)).bit_count() - 0.25 * others.bit_count() if others else 100.0
        if s == SPADES:
            if hand & QS_BIT or (queen_out and hand & HIGH_SPADE_BITS and c >= QS):
                score += 50  # leading spades would give the queen or the trick under it away
            elif queen_out and not hand & (HIGH_SPADE_BITS | QS_BIT):
                score -= 3  # flush the queen out
        if s == HEARTS:
            score += 1
        if score < best_score:
            best_card, best_score = c, score
    return best_card


def _legal_ids(state: State) -> list[int]:
    """The first-pack ids the seat on turn may play, each once (a twin is one choice)."""
    legal = state.legal_mask()
    if legal > ONE_PACK:
        legal = (legal & ONE_PACK) | (legal >> PACK)
    return card_ids(legal)


def _ucb_pick(children: dict[int, _Node], legal: list[int]) -> int:
    """UCB1 over the legal cards' children (each of them counts one more availability); the first
    best card wins a tie."""
    best, card = -math.inf, -1
    for c in legal:
        ch = children[c]
        ch.avail += 1
        score = ch.reward / ch.visits + UCB_C * math.sqrt(math.log(ch.avail) / ch.visits)
        if score > best:
            best, card = score, c
    return card


def _rewards(points: list[int]) -> list[float]:
    """Each seat's reward: the mean of the others' points minus its own, in units of 26."""
    n = len(points)
    total = sum(points)
    return [((total - p) / (n - 1) - p) / 26 for p in points]


def _finish(state: State, shooter: int) -> list[int]:
    """Play the hand out with the fast moon-aware policy (`shooter` >= 0: that seat goes for the
    moon); the points each seat scores, the moon rule applied. The last trick is settled here
    rather than pushed, which saves the engine scoring the hand and dealing the next one."""
    options = state.options
    n = options.players
    threat = _threat(state) if shooter < 0 else shooter
    while True:
        if not state.trick:
            if state.phase != PLAYING:
                break
            if all(h.bit_count() == 1 for h in state.hands):
                _last_trick(state)
                break
            if shooter < 0:
                threat = _threat(state)
        seat = state.turn
        card = _policy(state, threat) if threat >= 0 else ROLLOUT(state)
        state.push(seat, Play(card))
    if state.phase != PLAYING:  # the search reached the end of the hand in the tree
        return list(state.sheet[-1]["points"])
    taken = state.taken
    penalties = state.in_play & options.penalty_mask
    points = [state.points_of(m) for m in taken]
    for s in range(n):
        if taken[s] & penalties == penalties:  # a moon: 26 off for the shooter (the relative score)
            value = state.points_of(penalties)
            return [
                p - state.points_of(m & penalties) - (value if i == s else 0)
                for i, (p, m) in enumerate(zip(points, taken, strict=True))
            ]
    return points


def _last_trick(state: State) -> None:
    """Give the last trick (every seat holds one card) to its winner, without the engine."""
    n = state.options.players
    leader = state.turn
    cards = [state.hands[(leader + i) % n] for i in range(n)]
    lead_suit = (cards[0].bit_length() - 1) // 13
    best, winner = -1, leader
    mask = 0
    for i, m in enumerate(cards):
        mask |= m
        c = m.bit_length() - 1
        if c // 13 == lead_suit and c > best:
            best, winner = c, (leader + i) % n
    if state.options.two_packs:  # twins cancel; all cancelled on the last trick: the leader's
        winner = trick_winner([m.bit_length() - 1 for m in cards], leader, n)
    state.taken[winner] |= mask | state.carried
    for s in range(n):
        state.hands[s] = 0


ROLLOUT = smart_card  # the rollout policy (bots.strong.fast_card: the strong level's)


def _threat(state: State) -> int:
    """The seat that looks to be shooting the moon: alone to hold penalty cards, with enough
    (twice as many hearts with two packs)."""
    options = state.options
    two = options.two_packs
    penalties = options.penalty_mask if two else PENALTY_BITS
    holder = -1
    for s, m in enumerate(state.taken):
        if m & penalties:
            if holder >= 0:
                return -1
            holder = s
    if holder < 0:
        return -1
    if two:
        return holder if (state.taken[holder] & options.hearts_mask).bit_count() >= 2 * THREAT_HEARTS else -1
    return holder if (state.taken[holder] & HEART_BITS).bit_count() >= THREAT_HEARTS else -1


def _policy(state: State, threat: int) -> int:
    """The rollout choice when `threat` is going for the moon: it takes every trick it can; the
    others take a trick from it when they can and never throw it points."""
    seat = state.turn
    cards = card_ids(state.legal_mask())
    trick = state.trick
    two = state.options.two_packs
    if two:
        trick = [c % PACK for c in trick]
    if seat == threat:
        if trick and not any(c // 13 == trick[0] // 13 for c in cards):
            plain = [c for c in cards if c // 13 != HEARTS and c != QS]
            return min(plain or cards, key=lambda c: c % 13)
        return max(cards, key=lambda c: c % 13)
    if not trick:
        return fast_card(state)
    n = state.options.players
    lead = trick[0] // 13
    if two:  # the highest card no twin cancelled; nobody yet when every card is cancelled
        live = [c for c in trick if c // 13 == lead and trick.count(c) == 1]
        if not live:
            return fast_card(state)
        best = max(live)
    else:
        best = max((c for c in trick if c // 13 == lead), key=lambda c: c % 13)
    winner = (state.leader + trick.index(best)) % n
    following = [c for c in cards if c // 13 == lead]
    if winner == threat:
        if following:
            beating = [c for c in following if c > best]
            if beating:
                return min(beating)
        else:
            plain = [c for c in cards if c // 13 != HEARTS and c != QS]
            if plain:
                return max(plain, key=lambda c: c % 13)
    return fast_card(state)


def _can_attempt(view: dict[str, Any], cards: list[int]) -> bool:
    """Whether to search a moon attempt too: no other seat has taken a penalty point, this seat
    holds two of the three highest hearts still out, and a third of its cards are queens or
    higher. (A cheap filter: the shooting search itself decides whether to go for it.)"""
    me = view["seat"]
    if any(p > 0 for s, p in enumerate(view["points_taken"]) if s != me):
        return False
    hand = parse_cards(view["hand"])
    played = {parse_cards([e["card"]])[0] for t in view["tricks"] for e in t["cards"]}
    played |= {parse_cards([e["card"]])[0] for e in view["trick"]}
    top = sorted((c for c in range(39, 52) if c not in played), reverse=True)[:3]
    high = sum(1 for c in hand if c % 13 >= 10)
    return sum(1 for c in top if c in hand) >= min(2, len(top)) and high * 3 >= len(hand)


def choose_pass(
    view: dict[str, Any], rng: random.Random, budget: int | None = None, deadline: float | None = None
) -> list[str] | None:
    """The three cards to pass: `basic`'s pass and its neighbours (any three of the five cards it
    ranks most dangerous, and the three lowest for a moon) are each played out, by the fast
    policy, in the same sampled deals of the unseen cards, with the other seats passing as `basic`
    does; the best mean result is passed. None for two packs (the caller passes as basic). With
    `deadline`, as many deals as fit before it (at least two) instead of the budget's."""
    legal = view["legal_actions"]
    if legal is None or legal["type"] != "pass":
        return None
    options = Options.from_dict(view["options"])
    if options.two_packs:
        return None
    hand: list[str] = legal["from"]
    ranked = sorted(hand, key=lambda c: -danger(c, hand))
    candidates = [sorted(basic_pass(hand, 3))]
    for combo in [*itertools.combinations(ranked[:5], 3), sorted(hand, key=rank_of)[:3]]:
        if sorted(combo) not in candidates:
            candidates.append(sorted(combo))
    budget = int(iterations() * PASS_SHARE) if budget is None else budget
    low = candidates.index(sorted(sorted(hand, key=rank_of)[:3]))
    deals = max(2, budget // (len(candidates) + 1))  # + 1: the low pass is also played shooting
    n, me = options.players, view["seat"]
    mine = parse_cards(hand)
    unseen = [c for c in card_ids(cards_in_play(options)) if c not in set(mine)]
    size = len(mine)
    others = [s for s in range(n) if s != me]
    totals = [0.0] * len(candidates)
    shooting = 0.0
    passes = [parse_cards(c) for c in candidates]
    for dealt in range(deals) if deadline is None else itertools.count():
        if deadline is not None and dealt >= 2 and time.monotonic() >= deadline:
            break
        rng.shuffle(unseen)
        holdings: list[list[int]] = [[] for _ in range(n)]
        holdings[me] = mine
        for k, s in enumerate(others):
            holdings[s] = unseen[k * size : (k + 1) * size]
        base = State.from_deal(
            options, [names(_mask(h)) for h in holdings], hand_number=view["hand_number"], seed="pass"
        )
        for s in others:
            base.push(s, Pass(parse_cards(basic_pass(names(_mask(holdings[s])), 3))))
        for k, cards in enumerate(passes):
            state = base.copy()
            state.push(me, Pass(cards))
            if k == low:
                shot = state.copy()
                shooting += _rewards(_finish(shot, me))[me]
            totals[k] += _rewards(_finish(state, -1))[me]
    totals[low] = max(totals[low], shooting)  # the low pass, played for the moon if that is better
    best = max(range(len(candidates)), key=lambda k: (totals[k], -k))
    return candidates[best]


def _mask(cards: list[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m
