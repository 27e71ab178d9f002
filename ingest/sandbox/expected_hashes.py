"""Print the `EXPECTED` entries of ingest/sandbox/corpus_check.py for this platform (a maintainer's tool).

    python -m ingest.sandbox.expected_hashes

builds the tiny, small and default corpora here and prints their hashes as Python source to paste into
`EXPECTED` after a pin or the corpus code changed (docs/sandbox.md). Kept out of corpus_check.py, which
ingest/sandbox/corpus.py imports, so that the check does not import the corpus builder back.
"""

from __future__ import annotations

from pathlib import Path

from ingest.sandbox.corpus_check import corpus_hashes, expected_key


def current_entries(sizes=("tiny", "small", "default"), seed: int = 0) -> dict:
    """Build the corpus of each size here and return the `EXPECTED` entries for this platform."""
    import tempfile

    from ingest.sandbox.corpus import collect_corpus
    from ingest.sandbox.sizes import get_size

    out = {}
    for name in sizes:
        size = get_size(name)
        with tempfile.TemporaryDirectory() as tmp:
            s = collect_corpus(size, Path(tmp), seed)
            out[expected_key(size, seed)] = corpus_hashes(s.corpus_jsonl).to_json()
    return out


def format_entries(entries: dict) -> str:
    """`EXPECTED` entries as Python source, one hash a line."""
    lines = []
    for key, v in entries.items():
        lines.append(f"    {key!r}: {{")
        lines.append(f'        "corpus_jsonl": "{v["corpus_jsonl"]}",')
        lines.append('        "domains": {')
        lines += [f'            "{d}": "{h}",' for d, h in v["domains"].items()]
        lines.append("        },")
        lines.append("    },")
    return "\n".join(lines)


if __name__ == "__main__":  # the entries to paste into EXPECTED
    print(format_entries(current_entries()))
