"""A .jsonl.zst of several frames (what `cat a.zst b.zst` or a streaming writer makes) is read whole, as
`zstd -dc` reads it (issue 33 item 2: the first frame alone was read, the rest dropped with exit 0)."""

from __future__ import annotations

import json

import pytest
import zstandard

from ingest.errors import UserError
from ingest.jsonl import open_lines


def _frames(n_frames: int, per: int) -> tuple[bytes, list[str]]:
    texts, blob = [], b""
    for f in range(n_frames):
        lines = [json.dumps({"text": f"frame {f} doc {i}"}) for i in range(per)]
        texts += lines
        blob += zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode())
    return blob, texts


def test_every_frame_is_read(tmp_path) -> None:
    blob, texts = _frames(3, 20)
    path = tmp_path / "multi.jsonl.zst"
    path.write_bytes(blob)
    assert [line.decode().rstrip("\n") for line in open_lines(path)] == texts


def test_a_line_split_across_frames_is_one_line(tmp_path) -> None:
    c = zstandard.ZstdCompressor()
    path = tmp_path / "split.jsonl.zst"
    path.write_bytes(c.compress(b'{"text": "half') + c.compress(b' and half"}\n{"text": "next"}\n'))
    assert [json.loads(x) for x in open_lines(path)] == [{"text": "half and half"}, {"text": "next"}]


def test_a_truncated_later_frame_is_an_error(tmp_path) -> None:
    blob, _ = _frames(2, 50)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(blob[:-7])
    with pytest.raises(UserError, match="ends early"):
        list(open_lines(path))


def test_index_build_reads_every_frame(tmp_path) -> None:
    from ingest.index.readers import iter_documents

    blob, texts = _frames(2, 40)
    path = tmp_path / "docs.jsonl.zst"
    path.write_bytes(blob)
    assert len(list(iter_documents([path], "text"))) == 80
