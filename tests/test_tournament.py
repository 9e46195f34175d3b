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
