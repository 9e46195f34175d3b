"""Verifiable deals: the commitment published at each deal binds the table id and the hand's seed;
once the hand is over, the revealed seed recomputes exactly the deal that was played."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from games.engine import Options
from games.verify import check_deal

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)  # bots move after each commit
def test_every_hand_of_a_game_verifies_against_the_commitment_seen_at_its_deal(tmp_path: Path) -> None:
    client = APIClient()
    token = client.post("/api/v1/guests", {"name": "watcher"}, format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {"options": {"players": 5, "target_score": 50}, "bots": {str(s): "basic" for s in range(5)}}
    table = client.post("/api/v1/tables", body, format="json").json()
    table = client.get(f"/api/v1/tables/{table['id']}").json()
    assert table["status"] == "finished"  # five bots play the whole game at once (eager tasks)
    events = client.get(f"/api/v1/tables/{table['id']}/events").json()["events"]
    seen_at_deal = {e["hand"]: e["deal_commitment"] for e in events if e["type"] == "hand_started"}
    assert len(seen_at_deal) >= 2
    options = Options.from_dict(table["options"])
    for number, commitment in seen_at_deal.items():
        hand = client.get(f"/api/v1/tables/{table['id']}/hands/{number}").json()
        assert hand["deal_commitment"] == commitment and hand["seed"] == hand["record"]["seed"]
        dealt = hand["record"]["dealt"]
        result = check_deal(
            table=table["id"], seed=hand["seed"], commitment=commitment, options=options, dealt=dealt
        )
        assert result["commitment_ok"] and result["deal_ok"], result
        # Bound to this table and this hand: another table id, or another hand's seed, fails.
        assert not check_deal(
            table=table["id"] + 1, seed=hand["seed"], commitment=commitment, options=options
        )["commitment_ok"]
        other = client.get(f"/api/v1/tables/{table['id']}/hands/{1 if number > 1 else 2}").json()
        wrong = check_deal(
            table=table["id"], seed=other["seed"], commitment=commitment, options=options, dealt=dealt
        )
        assert not wrong["commitment_ok"] and not wrong["deal_ok"]
    # The documented command, as a player would run it.
    hand = client.get(f"/api/v1/tables/{table['id']}/hands/1").json()
    (tmp_path / "dealt.json").write_text(json.dumps(hand["record"]["dealt"]))
    args = [sys.executable, "-m", "games.verify", "--table", str(table["id"]), "--seed", hand["seed"]]
    args += ["--players", "5", "--dealt", str(tmp_path / "dealt.json")]
    ok = subprocess.run([*args, "--commitment", seen_at_deal[1]], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and "deal verified" in ok.stderr
    bad = subprocess.run([*args, "--commitment", "0" * 64], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and "MISMATCH" in bad.stderr


@pytest.mark.django_db(transaction=True)  # bots move after each commit
def test_a_running_hand_shows_its_commitment_but_not_its_seed() -> None:
    client = APIClient()
    token = client.post("/api/v1/guests", {"name": "player"}, format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    table = client.post(
        "/api/v1/tables", {"bots": {"1": "basic", "2": "basic", "3": "basic"}}, format="json"
    ).json()
    client.post(f"/api/v1/tables/{table['id']}/join", {}, format="json")
    hands = client.get(f"/api/v1/tables/{table['id']}/hands").json()["hands"]
    game = client.get(f"/api/v1/tables/{table['id']}").json()["game"]
    assert hands == [
        {
            "number": 1,
            "pass_direction": "left",
            "deal_commitment": game["deal_commitment"],
            "finished": False,
            "seed": None,
        }
    ]
    assert len(game["deal_commitment"]) == 64
