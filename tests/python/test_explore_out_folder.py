"""`lmaudit explore --out DIR` never deletes or overwrites what it did not write (issue 33 item 3: an existing
DIR/data of the user's was removed, exit 0)."""

from __future__ import annotations

import pytest

from ingest.errors import UserError
from ingest.explore.static import MARKER, claim_folder


def test_a_users_folder_is_refused_and_left_alone(tmp_path) -> None:
    out = tmp_path / "mine"
    (out / "data").mkdir(parents=True)
    (out / "data" / "thesis.tex").write_text("keep me")
    with pytest.raises(UserError, match="not empty and was not written by `lmaudit explore`"):
        claim_folder(out)
    assert (out / "data" / "thesis.tex").read_text() == "keep me"
    assert not (out / MARKER).exists()


def test_new_empty_and_own_folders_are_taken(tmp_path) -> None:
    claim_folder(tmp_path / "new" / "site")
    assert (tmp_path / "new" / "site" / MARKER).exists()
    (tmp_path / "empty").mkdir()
    claim_folder(tmp_path / "empty")
    own = tmp_path / "new" / "site"
    (own / "data").mkdir()
    claim_folder(own)  # an earlier export of ours: fine to replace
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="is a file"):
        claim_folder(f)


def test_docs_out_never_overwrites_a_users_folder(tmp_path) -> None:
    """`lmaudit docs --out DIR` replaced DIR/index.html (and manifest.json, catalog.json) whatever DIR held."""
    from ingest.explore.docs import MARKER as DOCS_MARKER
    from ingest.explore.docs import claim_docs_folder

    user = tmp_path / "site"
    user.mkdir()
    (user / "index.html").write_text("my page")
    (user / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not written by `lmaudit docs`"):
        claim_docs_folder(user)
    assert (user / "index.html").read_text() == "my page"
    claim_docs_folder(tmp_path / "new")  # a new folder
    old = tmp_path / "old"  # a site written before the marker existed: only the site's own files
    old.mkdir()
    for name in ("index.html", "manifest.json", "catalog.json"):
        (old / name).write_text("{}")
    claim_docs_folder(old)
    (user / DOCS_MARKER).write_text("")
    claim_docs_folder(user)  # an earlier `lmaudit docs` wrote here
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="is a file"):
        claim_docs_folder(f)
