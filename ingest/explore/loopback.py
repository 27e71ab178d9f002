"""The HTTP server both `lmaudit explore --serve` and `lmaudit docs --serve` run on 127.0.0.1.

Two things the standard library's server does not do by itself:

- a listen backlog of 5 (`request_queue_size`): a page that fires many requests at once (or 200 clients)
  had 16-31 % of its connections reset or timed out; here the backlog is `BACKLOG`, and each request runs
  in its own (daemon) thread;
- no check of the `Host` header: a web page on another site can make the browser resolve its own name to
  127.0.0.1 (DNS rebinding) and read the answers as same-origin. Only requests addressed to
  `127.0.0.1[:port]`, `localhost[:port]` or the bound address are answered; any other gets 421.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BACKLOG = 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


class LoopbackServer(ThreadingHTTPServer):
    request_queue_size = BACKLOG
    daemon_threads = True


def host_allowed(header: str | None, bound: tuple) -> bool:
    """True when a request's Host header names this server: a loopback name or the bound address, with no
    port or the bound port."""
    if not header:
        return False
    host, port = bound[0], bound[1]
    name, sep, given = header.strip().lower().rpartition(":")
    if not sep or name.endswith("]"):  # no port (or a bare IPv6 literal, which this server never binds)
        name, given = header.strip().lower(), ""
    if given and given != str(port):
        return False
    return name in (*LOOPBACK_NAMES, str(host).lower())


def refuse_foreign_host(handler: BaseHTTPRequestHandler) -> bool:
    """Answer 421 and return True when the request's Host header is not this server's (see the module
    docstring); the handler then stops."""
    if host_allowed(handler.headers.get("Host"), handler.server.server_address):
        return False
    body = b"421 Misdirected Request: this server answers only requests to 127.0.0.1 or localhost\n"
    handler.send_response(421)
    handler.send_header("Content-Type", "text/plain; charset=utf-8")
    handler.send_header("Content-Length", str(len(body)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)
    handler.close_connection = True
    return True
