"""`lmaudit explore --serve`: the page and its JSON requests on 127.0.0.1 (the standard library's server).

Bound to the loopback address only: the warehouse may hold text nobody should publish by accident. Each
request answers one page of the generations table, one generation or one span's documents, so a paper-scale
warehouse (200,000 generations) never travels to the browser at once.
"""

from __future__ import annotations

import json
import math
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

from ingest.errors import UserError
from ingest.explore.loopback import LoopbackServer, refuse_foreign_host
from ingest.explore.page import render_page
from ingest.explore.queries import HEADLINE, Explorer, GenQuery

HOST = "127.0.0.1"


def _clean(v):
    """JSON has no NaN/inf (DuckDB returns them for empty aggregates) and no dates."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def to_json(obj) -> bytes:
    return json.dumps(_clean(obj), default=str, allow_nan=False).encode()


def gen_query(params: dict[str, list[str]], page_size: int) -> GenQuery:
    """A GenQuery from the page's query string (`run`, `setting`, `domain`, `full`, `document_set`,
    `min_longest`, `min_nvr`, `sort`, `desc`, `page`, `size`)."""
    def one(name):
        v = params.get(name, [""])[0].strip()
        return v or None

    def number(name, kind):
        v = one(name)
        if v is None:
            return None
        try:
            return kind(v)
        except ValueError:
            raise UserError(f"{name} must be a number, not {v!r}") from None

    full = one("full")
    if full not in (None, "yes", "no"):
        raise UserError(f"full must be yes or no, not {full!r}")
    return GenQuery(run_ids=tuple(r for r in params.get("run", []) if r), setting=one("setting"),
                    domain=one("domain"), full_match=None if full is None else full == "yes",
                    document_set=one("document_set"),
                    min_longest=number("min_longest", int), min_nv_recall=number("min_nvr", float),
                    sort=one("sort") or "longest_span", descending=(one("desc") or "1") != "0",
                    page=number("page", int) or 0, size=number("size", int) or page_size)


def make_handler(explorer: Explorer, page_size: int = 50):
    page = render_page("served", str(explorer.home), page_size).encode()
    runs_info = {"runs": explorer.runs(), "facets": explorer.facets(), "headline": list(HEADLINE)}

    class Handler(BaseHTTPRequestHandler):
        server_version = "lmaudit-explore"

        def log_message(self, format, *args):  # noqa: A002 - quiet: one line per request is noise
            pass

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, obj, status: int = 200) -> None:
            self._send(status, to_json(obj), "application/json; charset=utf-8")

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if refuse_foreign_host(self):
                return
            url = urlparse(self.path)
            params = parse_qs(url.query, keep_blank_values=True)
            try:
                if url.path in ("/", "/index.html"):
                    self._send(200, page, "text/html; charset=utf-8")
                elif url.path == "/api/runs":
                    self._json(runs_info)
                elif url.path == "/api/generations":
                    p = explorer.generations(gen_query(params, page_size))
                    self._json({"rows": p.rows, "total": p.total, "page": p.page, "size": p.size,
                                "seconds": round(p.seconds, 4)})
                elif url.path == "/api/generation":
                    g = explorer.generation(params.get("id", [""])[0])
                    self._json(g if g else {"error": "no such generation"}, 200 if g else 404)
                elif url.path == "/api/span":
                    d = explorer.span_documents(params.get("id", [""])[0])
                    self._json(d if d else {"error": "no such span"}, 200 if d else 404)
                else:
                    self._json({"error": "not found"}, HTTPStatus.NOT_FOUND)
            except UserError as e:
                self._json({"error": str(e)}, HTTPStatus.BAD_REQUEST)
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as e:  # noqa: BLE001 - a bug still answers (the request used to hang up unanswered)
                self._json({"error": f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"},
                           HTTPStatus.INTERNAL_SERVER_ERROR)

    return Handler


def make_server(explorer: Explorer, port: int = 8765, page_size: int = 50) -> LoopbackServer:
    """A server on 127.0.0.1:`port` (0: any free port; `server.server_address` says which)."""
    try:
        return LoopbackServer((HOST, port), make_handler(explorer, page_size))
    except OSError as e:
        raise UserError(f"cannot listen on {HOST}:{port} ({e.strerror or e}); choose another --port "
                        "(0 picks a free one)") from None
