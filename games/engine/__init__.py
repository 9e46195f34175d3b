"""The Hearts rules engine: pure Python, deterministic, no Django and no I/O."""

from .actions import ADD, SUBTRACT, Action, MoonChoice, Pass, Play, action_from_dict
from .cards import card_name, parse_card, parse_cards
from .deal import deal, hand_seed, new_seed, seed_commitment
from .errors import CODES, EngineError, IllegalAction, InvalidCard, InvalidOption
from .options import OPTION_SPECS, Options, describe_options
from .serial import dumps, loads, state_from_dict, state_to_dict
from .state import GAME_OVER, MOON, PASSING, PLAYING, Event, State, apply, new_game, replay
from .view import legal_view, view, visible_events

__all__ = [
    "ADD",
    "CODES",
    "GAME_OVER",
    "MOON",
    "OPTION_SPECS",
    "PASSING",
    "PLAYING",
    "SUBTRACT",
    "Action",
    "EngineError",
    "Event",
    "IllegalAction",
    "InvalidCard",
    "InvalidOption",
    "MoonChoice",
    "Options",
    "Pass",
    "Play",
    "State",
    "action_from_dict",
    "apply",
    "card_name",
    "deal",
    "describe_options",
    "dumps",
    "hand_seed",
    "legal_view",
    "loads",
    "new_game",
    "new_seed",
    "parse_card",
    "parse_cards",
    "replay",
    "seed_commitment",
    "state_from_dict",
    "state_to_dict",
    "view",
    "visible_events",
]
