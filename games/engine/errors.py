"""Engine errors: one stable machine-readable code per way an action or option can be wrong."""

from __future__ import annotations

from typing import Any, Final

# Every code the engine can raise. Adapters (REST, GraphQL) surface these unchanged, so
# clients can branch on them; renaming one is a breaking API change.
CODES: Final[frozenset[str]] = frozenset(
    {
        "wrong_phase",
        "not_your_turn",
        "card_not_in_hand",
        "must_lead_lowest_club",
        "must_follow_suit",
        "no_points_on_first_trick",
        "hearts_not_broken",
        "bad_pass",
        "moon_choice_invalid",
        "invalid_card",
        "invalid_option",
        "invalid_seat",
        "invalid_action",
        "invalid_state",
        "game_over",
    }
)


class EngineError(ValueError):
    """A rejected option, token or action; the state it was applied to is left unchanged."""

    code: str = "invalid_action"

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in CODES:
            raise AssertionError(f"unknown engine error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        """The error as the API shows it: code, message and any structured details."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = dict(self.details)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class InvalidOption(EngineError):
    """A table option that is unknown or out of range."""


class InvalidCard(EngineError):
    """A card token that is not in the notation."""


class IllegalAction(EngineError):
    """A well-formed action that the rules do not allow in this state."""
