"""Hand review: each of a seat's decisions of a finished hand (its pass, its card in each trick) set
against the choice a bot level makes from the same view, with the estimated points it lost.

A review is rebuilt from the table's move log alone: the game is replayed from its seed, and just
before each of the seat's actions in hand `n` the seat's view (`games.engine.view`, what a bot is
given) is taken; `bots.advice.estimates` then answers the bot's choice and every option's
estimated points for the rest of the hand from that view only, with a random seed fixed per
(table, hand, seat, decision, level), so a review never depends on a card the seat could not see
then and the same review answers the same. It is computed on the `hints` lane (never in a web
process), once per (table, hand, seat, level): a finished hand never changes, so the answer is kept
in the cache and every later request reads it (docs/bots-and-clocks.md#hand-review).

Who may ask: a seated player, for their own seat, once hand `n` is over; once the game is over
(finished or abandoned), anyone who may read the table, for every seat (all of its cards are public
then). Anything else is `review_not_allowed` with `reason` `hand_not_over` or `not_your_seat`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

from games import reads
from games.accounts import Principal
from games.engine import Options, State, action_from_dict, view
from games.errors import ServiceError
from games.infra import answers, jobs, ratelimit
from games.models import Move, Table
from games.records import log as records

LEVELS = ("basic", "strong", "expert")  # the levels a review (or a hint) can be asked of
DEFAULT_LEVEL = "strong"
CACHE_SECONDS = 30 * 86400  # a review is kept this long after it was first computed
_KINDS = (Move.Kind.START, Move.Kind.PASS, Move.Kind.PLAY, Move.Kind.MOON)
_FIELDS = ("seq", "kind", "position", "payload", "hand")


@dataclass(frozen=True)
class Decision:
    """One of the seat's actions in the hand: the view it was taken from and what it did."""

    index: int  # 0, 1, ... in the order the seat took them
    trick: int | None  # the trick it played to (1-based); None for its pass
    view: dict[str, Any]
    action: dict[str, Any]  # wire form


def check_level(level: object) -> str:
    """A review's (or hint's) level: one of LEVELS, else `invalid_bot_level`."""
    if level not in LEVELS:
        raise ServiceError(
            "invalid_bot_level",
            f"a review's level must be one of {', '.join(LEVELS)}",
            kind="malformed",
            levels=list(LEVELS),
        )
    return str(level)


def _refuse(reason: str, message: str) -> ServiceError:
    return ServiceError("review_not_allowed", message, kind="rules", reason=reason)


def allowed_seat(table: Table, principal: Principal, hand: int, seat: int | None) -> int:
    """The seat whose review of hand `hand` this caller may read (their own when `seat` is
    None), or the refusal: `not_found` for a hand not dealt, `invalid_seat`, or
    `review_not_allowed` with its `reason`."""
    players = int(table.options["players"])
    own = reads.seat_of(table, principal)
    if seat is None:
        seat = own
        if seat is None:
            raise ServiceError(
                "invalid_seat", "give the seat to review: you have none at this table", kind="malformed"
            )
    if type(seat) is not int or not 0 <= seat < players:
        raise ServiceError("invalid_seat", f"seat must be 0 to {players - 1}", kind="malformed", seat=seat)
    dealt = next((h for h in records.hands(table) if h.number == hand), None)
    if dealt is None:
        raise ServiceError("not_found", f"no hand {hand} at this table", kind="not_found")
    if reads.is_over(table) and dealt.finished:
        return seat  # every card of a finished game is public: any reader, any seat
    if not dealt.finished:
        raise _refuse("hand_not_over", f"hand {hand} is not over: it can be reviewed once it is")
    if own != seat:
        raise _refuse(
            "not_your_seat",
            "while the game goes on, a seated player reviews their own seat only",
        )
    return seat


def decisions(table: Table, hand: int, seat: int) -> list[Decision]:
    """The seat's passes and plays of hand `hand`, each with the seat's view just before it,
    replayed from the table's seed and move log."""
    log = records.moves(table, kinds=_KINDS, only=_FIELDS)
    state: State | None = None
    out: list[Decision] = []
    for move in log:
        if move.hand is not None and move.hand > hand and move.kind != Move.Kind.START:
            break
        if move.kind == Move.Kind.START:
            if state is None:
                state = State.new_game(Options.from_dict(table.options), table.seed, table=str(table.pk))
            continue
        if state is None:
            continue
        mine = (
            move.position == seat
            and move.hand == hand
            and move.kind in (Move.Kind.PASS, Move.Kind.PLAY)
            and state.hand_no == hand
        )
        if mine:
            trick = None if move.kind == Move.Kind.PASS else len(state.tricks) + 1
            out.append(Decision(len(out), trick, view(state, seat), dict(move.payload)))
        state.push(move.position, action_from_dict(move.payload))
    return out


def seed_of(table_id: int, hand: int, seat: int, index: int, level: str) -> int:
    """The random seed of one decision's estimate: fixed, so a review answers the same."""
    digest = hashlib.blake2b(f"review:{table_id}:{hand}:{seat}:{index}:{level}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def _points(options: list[tuple[dict[str, Any], float]], action: dict[str, Any]) -> float | None:
    """The estimated points of `action` among the advice's options (a pass compared as a set)."""
    for option, points in options:
        if option.get("type") != action.get("type"):
            continue
        if action["type"] == "play" and option.get("card") == action.get("card"):
            return float(points)
        if action["type"] == "pass" and sorted(option.get("cards", [])) == sorted(action.get("cards", [])):
            return float(points)
    return None


def _lost(played: float | None, chosen: float | None, same: bool) -> float | None:
    """Estimated points lost by the seat's action against the bot's: 0 when the same action,
    never below 0 (an action estimated better than the bot's lost nothing), None when the seat's
    action is not among the estimated options (a pass the estimator did not weigh)."""
    if same:
        return 0.0
    if played is None or chosen is None:
        return None
    return round(max(0.0, played - chosen), 2)


def compute(table: Table, hand: int, seat: int, level: str, think_ms: int | None = None) -> dict[str, Any]:
    """The review of `seat` in hand `hand` at `level` (no permission check: the callers check)."""
    from bots import advice  # the estimator: imported where it runs (the hints lane)

    passed: dict[str, Any] | None = None
    tricks: list[dict[str, Any]] = []
    for decision in decisions(table, hand, seat):
        rng = random.Random(seed_of(table.pk, hand, seat, decision.index, level))
        found = advice.estimates(decision.view, level, rng, think_ms, also=[decision.action])
        options = [(dict(a), float(p)) for a, p in found.options]
        choice = dict(found.choice)
        if decision.trick is None:
            cards, bot_cards = list(decision.action["cards"]), list(choice["cards"])
            same = sorted(cards) == sorted(bot_cards)
            lost = _lost(_points(options, decision.action), _points(options, choice), same)
            passed = {"cards": cards, "bot_cards": bot_cards, "points_lost": lost}
        else:
            card, bot_card = decision.action["card"], choice["card"]
            lost = _lost(_points(options, decision.action), _points(options, choice), card == bot_card)
            tricks.append({"trick": decision.trick, "card": card, "bot_card": bot_card, "points_lost": lost})
    losses = [t["points_lost"] for t in tricks] + ([passed["points_lost"]] if passed else [])
    return {
        "table_id": table.pk,
        "hand": hand,
        "seat": seat,
        "level": level,
        "pass": passed,
        "tricks": tricks,
        "total_points_lost": round(sum(x for x in losses if x is not None), 2),
    }


def cache_key(table: Table, hand: int, seat: int, level: str) -> str:
    """Where a review is kept: by table (its id, and a digest of its game seed, so that a
    database restored or recreated with the same ids never answers another game's review),
    hand, seat and level."""
    game = hashlib.blake2b(f"{table.pk}:{table.seed}".encode(), digest_size=6).hexdigest()
    return f"hearts:review:{table.pk}:{game}:{hand}:{seat}:{level}"


def think_ms() -> int | None:
    """The thinking time of one decision's estimate (REVIEW_THINK_MS); None: the level's fixed
    budget, which a seed replays exactly."""
    value = int(settings.REVIEW_THINK_MS)
    return value or None


def store(table_id: int, hand: int, seat: int, level: str) -> dict[str, Any] | None:
    """The hints lane's work: compute the review and keep it (None: the table is gone)."""
    table = reads.table_row(table_id)
    if table is None:
        return None
    key = cache_key(table, hand, seat, level)
    found: dict[str, Any] | None = cache.get(key)
    if found is not None:
        return found  # asked twice before the first answer: computed once
    answer = compute(table, hand, seat, level, think_ms())
    cache.set(key, answer, CACHE_SECONDS)
    answers.ring(key)
    return answer


def wait_seconds() -> float:
    """How long a request waits for the lane's answer (REVIEW_WAIT_SECONDS)."""
    return float(settings.REVIEW_WAIT_SECONDS)


def review(
    principal: Principal, table: Table, hand: int, seat: int | None, level: str = DEFAULT_LEVEL
) -> dict[str, Any]:
    """The review the caller asked for: from the cache, or computed on the hints lane within
    REVIEW_WAIT_SECONDS (then `service_unavailable` with `retry_after`: the lane goes on and
    keeps it, so the retry finds it). A computation counts against REVIEW_RATE per caller."""
    level = check_level(level)
    seat = allowed_seat(table, principal, hand, seat)
    key = cache_key(table, hand, seat, level)
    found: dict[str, Any] | None = answers.look(key)
    if found is not None:
        return found
    ratelimit.check_one("review", principal.credential or principal.owner, settings.REVIEW_RATE)
    seconds = wait_seconds()
    answers.ask(lambda: jobs.review_hand(table.pk, hand, seat, level, expires=seconds), "review")
    found = answers.wait(key, seconds, look_first=False)
    if found is not None:
        return found
    raise ServiceError(
        "service_unavailable",
        "the review is still being computed: ask again in a few seconds",
        kind="unavailable",
        retry_after=2,
    )
