"""The PropMe text checks (ingest/metrics/text.py): hand-made cases and brute-force references."""

from __future__ import annotations

import random
import zlib

import pyarrow as pa
import pytest

from ingest.metrics import dbt_plugin
from ingest.metrics import text as T


def brute_loop(text: str, share=0.9, max_period=200, repeats=3) -> bool:
    b = " ".join(text.split()).encode("utf-8")
    n = len(b)
    for p in range(1, min(max_period, n // repeats) + 1):
        m = sum(1 for i in range(n - p) if b[i] == b[i + p])
        if m * 10 >= round(share * 10) * (n - p):
            return True
    return False


@pytest.mark.parametrize("text, expected", [
    ("I'm sorry. " * 5, True),
    ("I'm sorry. I'm sorry.\n\n   I'm sorry.  I'm sorry.", True),  # whitespace is collapsed first
    ("| | | | | | | | | | | |", True),
    ("ab" * 3, True),                      # 6 bytes, period 2 <= 6 // 3
    ("abcabcab", False),                   # 8 bytes: period 3 > 8 // 3 = 2
    ("Permission is hereby granted, free of charge, to any person obtaining a copy", False),
    ("", False),
    ("x", False),
])
def test_loop_cases(text: str, expected: bool) -> None:
    assert T.is_loop(text) is expected
    assert T.loop_flags([text]) == [expected]
    assert brute_loop(text) is expected


def test_loop_threshold_is_exact_at_90_percent() -> None:
    # period 10 over 80 bytes: 70 comparisons; changing a byte among the last ten breaks exactly one of them
    def broken(k: int) -> str:
        s = list("abcdefghij" * 8)
        for pos in range(70, 70 + k):
            s[pos] = "#"
        return "".join(s)

    # 63 of 70 = 0.9 exactly is a loop (0.9 * 70 is 63.00000000000001 in floating point); 62 of 70 is not,
    # and periods 20, 30 stay below 90% (53/60, 43/50)
    assert T.is_loop(broken(7)) and T.loop_flags([broken(7)]) == [True]
    assert not T.is_loop(broken(8)) and T.loop_flags([broken(8)]) == [False]
    assert brute_loop(broken(7)) and not brute_loop(broken(8))


def test_batched_loop_flags_equal_the_reference_on_random_texts() -> None:
    rng = random.Random(7)
    texts: list[str | None] = [None]
    units = ["I'm sorry. ", "ab", "| ", "na", "the end ", "x"]
    for _ in range(400):
        kind = rng.random()
        if kind < 0.4:  # near-loops with noise around the 90% threshold
            unit = rng.choice(units) * rng.randint(1, 3)
            s = list(unit * rng.randint(2, 40))
            for _ in range(rng.randint(0, max(1, len(s) // 8))):
                s[rng.randrange(len(s))] = rng.choice("#é ab")
            texts.append("".join(s))
        elif kind < 0.8:
            texts.append(" ".join(rng.choice(["alpha", "beta", "gamma", "déjà", "vu", "1234"])
                                  for _ in range(rng.randint(1, 60))))
        else:
            texts.append("".join(rng.choice("ab \n\t|é漢") for _ in range(rng.randint(0, 300))))
    got = T.loop_flags(texts, group=16)
    want = [None if t is None else T.is_loop(t) for t in texts]
    assert got == want
    assert sum(bool(x) for x in got) > 50 and sum(x is False for x in got) > 50  # both outcomes exercised
    assert want[1:] == [brute_loop(t) for t in texts[1:]]


def test_loop_parameters_are_honoured() -> None:
    s = "abcd" * 10
    assert T.is_loop(s, max_period=4)
    assert not T.is_loop(s, max_period=3)
    assert not T.is_loop("abcd" * 3, min_repeats=4)  # 12 bytes: period 4 > 12 // 4 = 3
    assert T.loop_flags([s], 0.9, 3, 3) == [False]


def test_letter_share_and_compression_ratio() -> None:
    assert T.letter_share("ab 12") == pytest.approx(2 / 4)
    assert T.letter_share("é_ 1") == pytest.approx(1 / 3)  # non-ASCII path
    assert T.letter_share("   \n") is None and T.letter_share(None) is None
    raw = ("|\n" * 100).encode()
    assert T.compression_ratio("|\n" * 100) == len(zlib.compress(raw, 9)) / len(raw)
    assert T.compression_ratio("") is None


def test_letter_share_ascii_fast_path_equals_the_regex_definition() -> None:
    import re

    rng = random.Random(3)
    for _ in range(500):
        t = "".join(rng.choice("aZ9_ \t\n\r\x0b\x1c|;{}-") for _ in range(rng.randint(1, 40)))
        non_space = len(re.sub(r"\s+", "", t))
        want = None if non_space == 0 else len(re.sub(r"[\W\d_]+", "", t)) / non_space
        assert T.letter_share(t) == want


@pytest.mark.parametrize("text, expected", [
    ("|\n" * 100, True),                   # ratio ~0.03, no letters
    ("-" * 500, True),
    ("| a |\n" * 200, True),               # letters are 1/3 of non-space characters
    ("word " * 200, False),                # compresses well but is all letters
    ("|" + "0123456789" * 2, False),       # few letters but not compressible enough
    ("", False),
])
def test_degenerate(text: str, expected: bool) -> None:
    assert T.is_degenerate(text) is expected


@pytest.mark.parametrize("text, expected", [
    ("import os\nfrom a import b\nx = 1\n", True),
    ("def f(x):\n    return x\n\nprint(f(2))\n", True),
    ("#include <stdio.h>\nint main() {\n  return 0;\n}\n", True),
    ("\\section{Intro}\n\\begin{document}\n\\end{document}\nSome prose.", True),
    ("SELECT a FROM t;\nSELECT b FROM u;\nSELECT c FROM v;\n", True),
    ("if x:\n    pass\nelse:\n    pass\n", True),
    ("if x:\n  pass\nelse:\n  pass\n", False),  # two control lines; 2-space indents do not count
    # two code lines only: not enough
    ("import os\nx = 1\nThe rest of this text is prose.\nMore prose here.", False),
    # three code lines among 11 non-empty lines: 27% < 30%
    ("import os\nx = 1\ny = 2\n" + "Plain sentence here.\n" * 8, False),
    ("x == y is a comparison\nnot = an assignment? no, it is one\nwe say hello\n", False),
    ("1234 5678 90 12 34 56", True),       # letter share < 0.5
    ("Once upon a time there was a model.\nIt wrote prose.\nThe end.", False),
])
def test_code_like(text: str, expected: bool) -> None:
    assert T.is_code_like(text) is expected


def test_code_line_rules() -> None:
    for line in ["import numpy as np", "from x import y", "#include <a>", "#define X 1", "def f():", "class A:",
                 "public void f()", "private int x", "static int y", "return x", "@decorator", "// comment",
                 "/* c */", "{", "} else", "<?php echo 1;", "<html>", "SELECT 1", "var x", "const y", "let z",
                 "print(1)", "console.log(1)", "System.out.println", "# heading", "for i in range(3):",
                 "x = 1", "self.a[i] += 2", "    indented prose", "\tindented", "\\section{A}",
                 "the end;", "something {", "  }"]:
        assert T.is_code_line(line), line
    for line in ["The cat sat on the mat.", "x == y", "Let us go", "Select the best one", "For example:",
                 "   ", "", "returned values", "printing"]:
        assert not T.is_code_line(line), line


def test_code_like_thresholds_are_parameters() -> None:
    text = "import os\nx = 1\nProse.\nProse.\nProse.\n"
    assert not T.is_code_like(text)
    assert T.is_code_like(text, min_lines=2)  # 2 of 5 lines = 40% >= 30%
    assert not T.is_code_like(text, min_lines=2, min_line_share=0.5)


def test_targeted_hit_normalizes_whitespace() -> None:
    assert T.targeted_hit("the  quick\nbrown fox jumps", " the quick brown  fox")
    assert not T.targeted_hit("the quick", "the quick brown")
    assert T.targeted_hit("anything", None) is None
    assert T.targeted_hit("anything", "   ") is None
    assert T.targeted_hit(None, "x") is None


def test_udfs_wrap_the_same_definitions_and_pass_nulls() -> None:
    import duckdb

    con = duckdb.connect()
    dbt_plugin.register(con)
    dbt_plugin.register(con)  # registering twice (a reused connection) is fine
    texts = ["|\n" * 100, "import os\nx = 1\nprint(x)\n", "I'm sorry. " * 6, "plain prose here", None]
    con.register("t", pa.table({"text": texts}))
    got = con.sql("""
        select propme_is_degenerate(text, 0.1, 0.5), propme_is_code_like(text, 3, 0.3, 0.5),
               propme_is_loop(text, 0.9, 200, 3), propme_targeted_hit(text, 'plain prose')
        from t""").fetchall()
    want = [(T.is_degenerate(x), T.is_code_like(x), T.is_loop(x), T.targeted_hit(x, "plain prose")) for x in texts]
    assert got == want
    assert got[-1] == (None, None, None, None)
    # a NULL threshold gives NULL
    assert con.execute("select propme_is_loop('abab abab abab', null, 200, 3)").fetchone() == (None,)
