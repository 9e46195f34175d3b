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
