"""Real vocabularies of the papers' model families, taken from the package registry (no model hub).

The source distribution of `llama-cpp-python` (MIT) carries llama.cpp's `models/ggml-vocab-*.gguf`: the
vocabularies of Llama-2 (SentencePiece with byte fallback; the Dolma and Pile infini-gram indexes use it),
GPT-NeoX (Pythia, OLMo-1) and MPT (the same tokenizer, with its test texts), GPT-2 (GPT-Neo), StarCoder,
Llama-3 and Falcon, each (but GPT-NeoX) with `.inp` test texts and `.out` the ids llama.cpp expects. `fetch`
downloads the pinned sdist with pip (a package registry: allowed where hubs are not), checks its sha256 and
the sha256 of each file it extracts, and keeps only those files in a cache folder. Nothing is committed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
MEMBER_DIR = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/models"

# name -> sha256 of ggml-vocab-<name>.gguf (and of its .inp / .out where llama.cpp ships test texts)
VOCABS: dict[str, dict[str, str]] = {
    "llama-spm": {"gguf": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
                  "out": "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"},
    "gpt-2": {"gguf": "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac",
              "out": "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60"},
    "gpt-neox": {"gguf": "ae593a7f9b8bb174ed4f5019e41530463e4dac7aa06e42dee8aa650d2bdac53d"},
    "mpt": {"gguf": "59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f",
            "out": "9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b"},
    "starcoder": {"gguf": "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d",
                  "out": "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764"},
    "llama-bpe": {"gguf": "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e",
                  "out": "118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b"},
    "falcon": {"gguf": "9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad",
               "out": "f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd"},
}
TEST_TEXTS_SHA256 = "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"  # every .inp is this file
SEPARATOR = "\n__ggml_vocab_test__\n"


@dataclass(frozen=True)
class VocabCase:
    text: str
    ids: list[int]  # what llama.cpp's tokenizer test expects, no BOS


def default_cache() -> Path:
    base = os.environ.get("LMAUDIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmaudit")
    return Path(base) / "vocabs" / f"{PACKAGE}-{VERSION}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _wanted(name: str) -> dict[str, str]:
    """file name -> sha256 of the files kept for vocabulary `name`."""
    want = {f"ggml-vocab-{name}.gguf": VOCABS[name]["gguf"]}
    if "out" in VOCABS[name]:
        want[f"ggml-vocab-{name}.gguf.inp"] = TEST_TEXTS_SHA256
        want[f"ggml-vocab-{name}.gguf.out"] = VOCABS[name]["out"]
    return want


def fetch(cache: Path | None = None, names: tuple[str, ...] = tuple(VOCABS)) -> Path:
    """The cache folder holding the named vocabularies (and their test texts), downloaded once with pip."""
    cache = Path(cache) if cache else default_cache()
    unknown = [n for n in names if n not in VOCABS]
    if unknown:
        raise UserError(f"unknown vocabulary {', '.join(unknown)}; known: {', '.join(VOCABS)}")
    want = {f: h for n in names for f, h in _wanted(n).items()}
    if all((cache / f).is_file() and _sha256(cache / f) == h for f, h in want.items()):
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
               "--dest", tmp, f"{PACKAGE}=={VERSION}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        sdist = Path(tmp) / SDIST
        if done.returncode != 0 or not sdist.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise UserError(f"could not download {PACKAGE}=={VERSION} with pip ({last}); the real vocabularies "
                            "come from that package registry")
        if _sha256(sdist) != SDIST_SHA256:
            raise UserError(f"{SDIST}: sha256 differs from the pinned one; refusing its vocabularies")
        with tarfile.open(sdist) as tar:
            for fname, digest in want.items():
                member = tar.getmember(f"{MEMBER_DIR}/{fname}")
                data = tar.extractfile(member).read()
                if hashlib.sha256(data).hexdigest() != digest:
                    raise UserError(f"{fname} in {SDIST}: sha256 differs from the pinned one")
                part = Path(tmp) / fname
                part.write_bytes(data)
                os.replace(part, cache / fname)
    return cache


def vocab_path(name: str, cache: Path | None = None) -> Path:
    return fetch(cache, (name,)) / f"ggml-vocab-{name}.gguf"


def expected_cases(name: str, cache: Path | None = None) -> list[VocabCase]:
    """llama.cpp's test texts of a vocabulary and the ids it expects (none for gpt-neox: use mpt)."""
    if "out" not in VOCABS.get(name, {}):
        raise UserError(f"llama.cpp ships no expected ids for {name}")
    folder = fetch(cache, (name,))
    return read_cases(folder / f"ggml-vocab-{name}.gguf.inp", folder / f"ggml-vocab-{name}.gguf.out")


def read_cases(inp: Path, out: Path) -> list[VocabCase]:
    """llama.cpp's test format: texts separated by a marker line; one line of expected ids per text."""
    texts = Path(inp).read_text(encoding="utf-8").split(SEPARATOR)
    ids = Path(out).read_text(encoding="utf-8").split("\n")
    if len(ids) < len(texts):
        raise UserError(f"{out}: {len(ids)} lines of ids for {len(texts)} texts in {inp}")
    return [VocabCase(t, [int(x) for x in line.split()]) for t, line in zip(texts, ids)]


