"""The tournament harness: fair (the candidate in every seat of the same deals), seeded, reported."""

from __future__ import annotations

import json
from pathlib import Path

from bots import tournament


def test_a_seeded_tournament_replays_exactly_and_reports_every_figure() -> None:
    first = tournament.run("basic", "random", deal_sets=12, games=2, seed=7, progress=False)
    again = tournament.run("basic", "random", deal_sets=12, games=2, seed=7, progress=False)
    assert first.per_deal_gaps == again.per_deal_gaps  # same seed, same deals, same decisions
    assert first.hands == 12 * 4 and first.games == 2
    low, high = first.gap_ci95
    assert low <= first.gap <= high
    # Every hand hands out all 26 points (or 78 on a moon); the mean over seats shows it.
    mean = (first.candidate_points_per_hand + 3 * first.reference_points_per_hand) / 4
    assert 26 / 4 <= mean <= 78 / 4
    assert first.candidate_ms_per_move > 0


def test_the_command_line_writes_json(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "result.json"
    tournament.main(
        [
            "--candidate",
            "random",
            "--reference",
            "basic",
            "--deal-sets",
            "3",
            "--players",
            "5",
            "--quiet",
            "--json",
            str(out),
        ]
    )
    data = json.loads(out.read_text())
    assert data["candidate"] == "random" and data["players"] == 5 and data["hands"] == 15


def test_a_bot_sees_only_its_seats_view(monkeypatch: object) -> None:
    """Every input a bot is given during hands holds no card another seat still holds unseen
    (its own pass aside, which it knows), and no other seat's pass while passing."""
    import re

    import bots.tournament as harness
    from games.engine import card_name
    from games.engine.cards import names

    token = re.compile(r"\b(?:10|[2-9TJQKA])[CDSH]\b")
    seen: list[tuple[dict[str, object], set[str]]] = []
    real = harness.decide

    def spy(view: dict[str, object], level: str, rng: object) -> dict[str, object]:
        state = current[0]
        seat = view["seat"]
        assert isinstance(seat, int)
        hidden = {c for s in range(state.options.players) if s != seat for c in names(state.hands[s])}
        hidden -= set(names(state.passes[seat]))  # it passed these: it knows where they are
        if state.phase == "passing":
            hidden |= {c for s in range(state.options.players) if s != seat for c in names(state.passes[s])}
        hidden -= set(names(state.hands[seat]))
        hidden -= {card_name(c) for _, cards, _ in state.tricks for c in cards}
        shown = dict(view)
        shown.pop("options")  # names the Omnibus card without saying who holds it
        seen.append((shown, hidden))
        return real(view, level, rng)  # type: ignore[arg-type]

    current: list[harness.State] = []
    real_hand = harness.play_hand

    def tracked(state: harness.State, *args: object) -> list[int]:
        current[:] = [state]
        return real_hand(state, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(harness, "decide", spy)  # type: ignore[attr-defined]
    monkeypatch.setattr(harness, "play_hand", tracked)  # type: ignore[attr-defined]
    harness.run("basic", "random", deal_sets=4, progress=False)
    assert len(seen) > 200
    for shown, hidden in seen:
        assert not set(token.findall(json.dumps(shown))) & hidden


def test_strong_samples_worlds_consistent_with_the_view_and_plays_legal_cards() -> None:
    import random

    from bots.strong import choose_play, sample_world
    from games.engine import Options, State, view

    options = Options.from_dict({"players": 4})
    state = State.new_game(options, "strong-test")
    rng = random.Random(3)
    from bots.strategy import decide
    from games.engine import action_from_dict

    checked = 0
    while state.phase != "game_over" and state.hand_no == 1:
        for seat in state.to_act():
            v = view(state, seat, history=False)
            if v["legal_actions"]["type"] == "play" and len(v["legal_actions"]["cards"]) > 1:
                world = sample_world(v, options, random.Random(checked))
                if world is not None:  # the sampled world agrees with everything the seat knows
                    assert world.hands[seat] == state.hands[seat] and world.trick == state.trick
                    assert [h.bit_count() for h in world.hands] == [h.bit_count() for h in state.hands]
                card = choose_play(v, random.Random(1), rollouts=24)
                assert card in v["legal_actions"]["cards"]
                assert card == choose_play(v, random.Random(1), rollouts=24)  # seeded: the same choice
                checked += 1
            state.push(seat, action_from_dict(decide(v, "basic", rng)))
    assert checked > 10


def test_jobs_spread_the_deal_sets_over_processes_with_the_serial_result() -> None:
    serial = tournament.run("basic", "random", deal_sets=6, games=2, seed=3, progress=False)
    spread = tournament.run("basic", "random", deal_sets=6, games=2, seed=3, progress=False, jobs=2)
    assert spread.per_deal_gaps == serial.per_deal_gaps and spread.hands == serial.hands == 24
    assert spread.candidate_points_per_hand == serial.candidate_points_per_hand
    assert spread.reference_points_per_hand == serial.reference_points_per_hand
    assert spread.gap_ci95 == serial.gap_ci95 and spread.candidate_win_rate == serial.candidate_win_rate
    assert spread.candidate_ms_per_move > 0 and spread.reference_ms_per_move > 0


def _rules_card(state: object) -> int:
    """strong's rollout rule as first written, on lists of card ids: the reference for the bit-mask
    version (the `basic` rules without views)."""
    from games.engine.cards import QS, card_ids

    cards = card_ids(state.legal_mask())  # type: ignore[attr-defined]
    trick = state.trick  # type: ignore[attr-defined]
    if not trick:
        safe = [c for c in cards if c // 13 != 3 and not (c // 13 == 2 and c % 13 >= 10)]
        return min(safe or cards, key=lambda c: c % 13)
    lead = trick[0] // 13
    following = [c for c in cards if c // 13 == lead]
    if following:
        best = max(c % 13 for c in trick if c // 13 == lead)
        under = [c for c in following if c % 13 < best]
        if under:
            return max(under, key=lambda c: c % 13)
        last = len(trick) == state.options.players - 1  # type: ignore[attr-defined]
        if last and not any(c // 13 == 3 or c == QS for c in trick):
            return max((c for c in following if c != QS), key=lambda c: c % 13, default=following[0])
        return min(following, key=lambda c: c % 13)
    for wanted in (QS, QS + 2, QS + 1):
        if wanted in cards:
            return wanted
    hearts = [c for c in cards if c // 13 == 3]
    return max(hearts or cards, key=lambda c: c % 13)


def test_strongs_rollouts_play_and_score_as_the_rules_and_the_engine_do() -> None:
    """The bit-mask rollout policy picks the reference rule's card in every position met, and a
    rollout that settles the last trick itself scores the hand as the engine does."""
    import random

    from bots.strong import fast_card, rollout
    from games.engine import MoonChoice, Options, Pass, Play, State
    from games.engine.cards import card_ids

    positions = 0
    for players, variant in [(3, "classic"), (4, "classic"), (5, "omnibus"), (6, "classic"), (7, "omnibus")]:
        options = Options.from_dict({"players": players, "variant": variant})
        for k in range(12):
            state = State.new_game(options, f"rules-{players}-{k}")
            for seat in range(players):
                state.push(seat, Pass(card_ids(state.hands[seat])[-3:]))
            rng = random.Random(k)
            start = state.copy()
            while state.hand_no == 1:
                assert fast_card(state) == _rules_card(state)
                positions += 1
                state.push(state.turn, Play(rng.choice(card_ids(state.legal_mask()))))
            ours, engine = start.copy(), start.copy()
            points = rollout(ours, rng)
            while engine.hand_no == 1:
                if engine.phase == "moon_choice":
                    engine.push(engine.shooter, MoonChoice(engine.default_moon_choice()))
                    continue
                engine.push(engine.turn, Play(_rules_card(engine)))
            assert points == engine.sheet[-1]["points"]
    assert positions > 500
