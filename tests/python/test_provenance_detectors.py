"""Licence, metadata and personal-data detectors of `lmaudit provenance` on hand-written texts with known answers,
false-positive traps included (ingest/provenance/; docs/provenance.md)."""

from __future__ import annotations

import pytest

from ingest.provenance.licences import detect_licence, normalize_expression, spdx_identifiers
from ingest.provenance.metadata import document_metadata
from ingest.provenance.personal_data import find_personal_data, mask

APACHE_HEADER = """# Copyright 2024 Someone. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""

MIT_TEXT = """MIT License

Copyright (c) 2020 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


@pytest.mark.parametrize("text, expected", [
    ("# SPDX-License-Identifier: BSD-3-Clause\nimport os\n", ["BSD-3-Clause"]),
    ("/* SPDX-License-Identifier: GPL-2.0+ OR MIT */\nint x;\n", ["GPL-2.0-or-later OR MIT"]),  # normalised
    ("// SPDX-License-Identifier: apache-2.0\n", ["Apache-2.0"]),  # case normalised
    ("<!-- SPDX-License-Identifier: MIT -->\n# SPDX-License-Identifier: MIT\n", ["MIT"]),  # repeats once
    ("# SPDX-License-Identifier: LicenseRef-Mine-1\n", []),  # not an SPDX id: never guessed
    ("x = 'no identifier here'\n", []),
])
def test_spdx_identifier_lines(text, expected):
    assert spdx_identifiers(text) == expected


def test_licence_texts_and_headers():
    header = detect_licence(APACHE_HEADER + "def f():\n    return 1\n" * 40)
    assert (header.expression, header.evidence) == ("Apache-2.0", "licence_text")
    assert 0 < header.coverage < 0.6  # a header on code, not a licence file
    mit = detect_licence(MIT_TEXT)
    assert (mit.expression, mit.ids) == ("MIT", ("MIT",)) and mit.coverage > 0.9
    both = detect_licence("# SPDX-License-Identifier: MIT\n" + MIT_TEXT)
    assert (both.expression, both.evidence) == ("MIT", "both")  # one licence, two pieces of evidence
    two = detect_licence("# SPDX-License-Identifier: BSD-3-Clause\n" + APACHE_HEADER)
    assert two.expression == "BSD-3-Clause AND Apache-2.0" and two.evidence == "both"
    # prose that names a licence is not a licence text
    none = detect_licence("This project is released under the MIT license; see the docs for details.\n" * 3)
    assert none.expression is None and none.evidence is None


@pytest.mark.parametrize("value, expected", [
    ("mit", "MIT"), ("Apache-2.0 OR MIT", "Apache-2.0 OR MIT"), ("GPL-2.0+", "GPL-2.0-or-later"),
    ("MIT AND BSD-3-Clause", "MIT AND BSD-3-Clause"), ("MIT license", None), ("Proprietary", None), ("", None),
    (None, None),
])
def test_declared_licence_normalisation(value, expected):
    assert normalize_expression(value) == expected


def test_metadata_fields_whatever_the_corpus_names_them():
    stack = document_metadata({"max_stars_repo_path": "src/a.py", "max_stars_repo_name": "org/repo",
                               "max_stars_repo_licenses": ["MIT", "Apache-2.0"], "id": 3})
    assert (stack.path, stack.repository, stack.licence, stack.url, stack.source) == (
        "src/a.py", "org/repo", "MIT AND Apache-2.0", None, None)
    dolma = document_metadata({"source": "c4", "metadata": {"url": "https://example.org/p"}})
    assert (dolma.source, dolma.url, dolma.path, dolma.repository, dolma.licence) == (
        "c4", "https://example.org/p", None, None, None)
    assert document_metadata({}) == document_metadata(None) == document_metadata({"license": "  "})
    assert document_metadata({}).licence is None


# (text, expected [(kind, value)]) - the traps expect nothing
CASES = [
    ("write to jane.doe@example.com today", [("email", "jane.doe@example.com")]),
    ("Maintainer: Dev Team <dev@python.org>.", [("email", "dev@python.org")]),
    ("mail jo@example.co.uk.", [("email", "jo@example.co.uk")]),  # the sentence's full stop is not in it
    ("y = A@B.T  # numpy matrix product", []),  # trap: a one-letter "TLD"
    ("@property\ndef f(self): ...", []),  # trap: a decorator
    ("use ``@torch.library.custom_op`` here", []),  # trap: a decorator in reST (found in the sandbox corpus)
    ("MARSHALL%PLU@io.arc.nasa.gov wrote", [("email", "MARSHALL%PLU@io.arc.nasa.gov")]),  # an old-style address
    ("pip install pkg@git+https://github.com/o/r", []),  # trap: a pip direct reference
    ("ssh git@localhost", []),  # trap: special-use domain
    ("call +1 650-253-0000 now", [("phone", "+1 650-253-0000")]),
    ("office (650) 253-0000", [("phone", "(650) 253-0000")]),
    ("tel: 415.555.2671", [("phone", "415.555.2671")]),
    ("London +44 20 7946 0958", [("phone", "+44 20 7946 0958")]),
    ("torch==2.13.0 numpy 1.26.4 version 3.11.2024", []),  # trap: version numbers
    ("id 4155552671 and ts 1733280000", []),  # trap: bare digit runs (ids, timestamps): decided not phones
    ("released 2026-12-04 03:15:02 on port 8080", []),  # trap: dates and ports
    ("ISBN 978-3-16-148410-0", []),  # trap: an ISBN
    ('aws_key = "AKIAIOSFODNN7EXAMPLE"', [("secret", "AKIAIOSFODNN7EXAMPLE")]),
    ("token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     [("secret", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx")]),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", [("secret", "sk_live_4eC39HqLyjWDarjtT1zdp7dc")]),
    ("-----BEGIN RSA PRIVATE KEY-----", [("secret", "BEGIN RSA PRIVATE KEY")]),
    ('commit = "3f786850e387550fdab836ed7e6dc881de23001b"', []),  # trap: a hex digest (git SHA): decided not a key
    ('checksum: "d41d8cd98f00b204e9800998ecf8427e"', []),  # trap: an md5
    ('blob = "SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0IGRhdGEu"', []),  # trap: base64 data
    ("server 8.8.8.8 and 203.0.113.7", []),  # IP addresses: not one of the three kinds
]


@pytest.mark.parametrize("text, expected", CASES)
def test_personal_data_known_answers(text, expected):
    found = find_personal_data(text)
    assert [(f.kind, f.value) for f in found] == expected
    for f in found:  # offsets point at the value in the text
        assert f.value in text[f.start:f.end + 1] or text[f.start:f.end] == f.value


def test_findings_are_masked_and_hashed():
    text = "contact jane.doe@example.com or +1 650-253-0000"
    found = find_personal_data(text)
    assert [f.masked for f in found] == ["ja***email", "+1***phone"]
    assert mask("AKIAIOSFODNN7EXAMPLE", "secret") == "AK***secret"
    assert all("example" not in f.masked and len(f.value_hash) == 16 for f in found)
    assert found[0].value_hash != found[1].value_hash
    assert [f.kind for f in find_personal_data(text, kinds=("phone",))] == ["phone"]
