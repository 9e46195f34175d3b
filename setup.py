"""Build hook: with HEARTS_COMPILE=1 the pure-Python rules engine is also compiled with mypyc."""

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

ext_modules = []
if os.environ.get("HEARTS_COMPILE") == "1":
    from mypyc.build import mypycify

    # `--config-file=`: the project's [tool.mypy] (strict, the Django plugin) is for `make lint`;
    # the build environment has mypy alone, and the engine needs no configuration to compile.
    ext_modules = mypycify(["--config-file=", *ENGINE_MODULES], opt_level="3")

setup(ext_modules=ext_modules)
