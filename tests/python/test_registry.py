"""The shared registry and KEY=VALUE parser: lazy entries import on first use, unknown names and
parameters are one-line user errors, values are typed by one rule."""

from __future__ import annotations

import sys

import pytest

from ingest.errors import UserError
from ingest.options import parse_key_values
from ingest.registry import Registry


def test_lazy_entry_imports_only_when_asked() -> None:
    reg = Registry("thing")
    reg.lazy("frac", "fractions:Fraction")
    sys.modules.pop("fractions", None)
    assert reg.names() == ["frac"] and "fractions" not in sys.modules
    assert reg.create("frac", 1, 3) == reg.get("frac")(1, 3)
    with pytest.raises(UserError, match=r"unknown thing 'x'; choose one of frac"):
        reg.get("x")


def test_parameters_are_checked_against_the_signature() -> None:
    reg = Registry("estimator")

    @reg.register("e")
    class E:
        def __init__(self, a: int = 1, seed: int = 0) -> None:
            self.a, self.seed = a, seed

    assert reg.create("e", a=3, seed=5, fixed=("seed",)).a == 3
    with pytest.raises(UserError, match=r"estimator 'e' has no parameter\(s\) \['b'\]; it takes \['a'\]"):
        reg.create("e", b=2, fixed=("seed",))


def test_key_values_are_typed_by_one_rule() -> None:
    got = parse_key_values(["n=3", "x=0.5", "flag=TRUE", "v=null", "l=[1,2]", "s=text=more", "max-df=2"],
                           "--param", "C=4", dashes=True)
    assert got == {"n": 3, "x": 0.5, "flag": True, "v": None, "l": [1, 2], "s": "text=more", "max_df": 2}
    for bad in (["a"], ["=1"], ["a=1", "a=2"]):
        with pytest.raises(UserError):
            parse_key_values(bad, "--param", "C=4")
    with pytest.raises(UserError):
        parse_key_values(["max-df=2"], "--engine-arg", "x=1")
