"""Build hook: with HEARTS_COMPILE=1 the rules engine and the bots' search are compiled with mypyc."""

import os

from setuptools import setup

# The engine's modules, in dependency order; games/engine/__init__.py stays interpreted.
ENGINE_MODULES = [
    "games/engine/errors.py",
    "games/engine/cards.py",
    "games/engine/options.py",
    "games/engine/actions.py",
    "games/engine/deal.py",
    "games/engine/record.py",
    "games/engine/state.py",
    "games/engine/view.py",
    "games/engine/serial.py",
]
# The bots' search: rollouts are pure Python on integers (bit masks), which mypyc runs about three
# times faster; compiled with the engine, in one group, so their calls into it are native calls.
# They make the same decisions as the source (tests/engine/test_build.py); bots/strategy.py and
# bots/tournament.py stay interpreted.
BOT_MODULES = [
    "bots/basic.py",
    "bots/sampling.py",
    "bots/strong.py",
    "bots/expert.py",
]

ext_modules = []
if os.environ.get("HEARTS_COMPILE") == "1":
    from mypyc.build import mypycify

    # `--config-file=`: the project's [tool.mypy] (strict, the Django plugin) is for `make lint`;
    # the build environment has mypy alone, and the code compiled needs no configuration.
    ext_modules = mypycify(["--config-file=", *ENGINE_MODULES, *BOT_MODULES], opt_level="3")

setup(ext_modules=ext_modules)
