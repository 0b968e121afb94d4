"""The fake cluster's ``tensorboard`` (on its compute nodes): ``tensorboard --logdir DIR [--host
H] [--port P]``, standard library only. It serves what the sandbox's stand-in serves (a page
titled "TensorBoard" listing the event files, ``/data/logdir``) on 127.0.0.1 (every fake node is
this machine) and prints TensorBoard's start line, naming the host it was given."""

from __future__ import annotations

import html
import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "2.19.0"


def _option(argv: list[str], name: str, default: str) -> str:
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _handler(logdir: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = f"TensorBoard/{VERSION}"

        def do_GET(self) -> None:
            if self.path == "/data/logdir":
                body, kind = json.dumps({"logdir": logdir}).encode(), "application/json"
            elif self.path in ("/", "/index.html"):
                names = sorted(
                    name for _root, _dirs, files in os.walk(logdir) for name in files
                    if "tfevents" in name
                )  # fmt: skip
                rows = "".join(f"<li>{html.escape(n)}</li>" for n in names)
                body = (
                    "<!doctype html><html><head><title>TensorBoard</title></head><body>"
                    f"<h1>TensorBoard</h1><p>{html.escape(logdir)}</p><ul>{rows}</ul></body></html>"
                ).encode()
                kind = "text/html; charset=utf-8"
            else:
                self.send_error(404, "Not found")
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def main(argv: list[str]) -> int:
    """Serve until SIGTERM/SIGHUP (or the parent's kill)."""
    logdir = _option(argv, "--logdir", "")
    if not logdir:
        print("tensorboard: error: the following arguments are required: --logdir", file=sys.stderr)
        return 2
    host = _option(argv, "--host", "localhost")
    port = int(_option(argv, "--port", "6006"))
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(logdir))

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    print(
        f"TensorBoard {VERSION} at http://{host}:{server.server_address[1]}/ "
        "(Press CTRL+C to quit)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    return 0
