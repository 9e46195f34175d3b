"""Which build of the engine the suite is testing: the plain source, or the mypyc-compiled one."""

import os

import games.engine.state


def test_engine_build_is_the_one_under_test() -> None:
    compiled = not str(games.engine.state.__file__).endswith(".py")
    assert compiled == (os.environ.get("HEARTS_EXPECT_COMPILED") == "1")
