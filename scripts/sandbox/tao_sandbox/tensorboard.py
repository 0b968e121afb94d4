"""``tensorboard --logdir DIR [--port P] [--host H | --bind_all]``: in place of TensorBoard (which
needs TensorFlow's wheels), an HTTP server that answers like one: ``/`` is a page titled
"TensorBoard" listing the run directories and their event files with sizes, ``/data/runs`` the
run names as JSON (as TensorBoard's own endpoint), ``/data/logdir`` the log dir. It prints
TensorBoard's start line and serves until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import html
import json
import os
import signal
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "2.19.0"


def event_files(logdir: str) -> list[tuple[str, str, int]]:
    """(run, file name, size) of every ``events.out.tfevents.*`` below ``logdir``."""
    found = []
    for root, _dirs, files in os.walk(logdir):
        for name in sorted(files):
            if "tfevents" in name:
                path = os.path.join(root, name)
                run = os.path.relpath(root, logdir)
                found.append((run, name, os.path.getsize(path)))
    return sorted(found)


def page(logdir: str) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(run)}</td><td>{html.escape(name)}</td><td>{size}</td></tr>"
        for run, name, size in event_files(logdir)
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>TensorBoard</title></head><body>"
        f"<h1>TensorBoard</h1><p>Log directory: <code>{html.escape(logdir)}</code></p>"
        "<table><tr><th>run</th><th>event file</th><th>bytes</th></tr>"
        f"{rows or '<tr><td colspan=3>No dashboards are active for the current data set.'}"
        "</table></body></html>\n"
    )


def handler_for(logdir: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = f"TensorBoard/{VERSION}"

        def do_GET(self) -> None:
            if self.path in ("/", "/index.html"):
                body, kind = page(logdir).encode(), "text/html; charset=utf-8"
            elif self.path == "/data/runs":
                runs = sorted({run for run, _name, _size in event_files(logdir)})
                body, kind = json.dumps(runs).encode(), "application/json"
            elif self.path == "/data/logdir":
                body, kind = json.dumps({"logdir": logdir}).encode(), "application/json"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tensorboard", description="TensorBoard (sandbox stand-in)"
    )
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--port", type=int, default=6006)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--bind_all", action="store_true")
    parser.add_argument("--reload_interval", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.bind_all and args.host != "localhost":
        print("tensorboard: error: --host and --bind_all are mutually exclusive", file=sys.stderr)
        return 2
    host = "" if args.bind_all else args.host
    try:
        server = ThreadingHTTPServer((host, args.port), handler_for(os.path.abspath(args.logdir)))
    except OSError as exc:
        print(
            f"E TensorBoard could not bind to port {args.port}, it was already in use ({exc})",
            file=sys.stderr,
        )
        return 1
    port = server.server_address[1]
    shown = socket.gethostname() if args.bind_all else args.host
    print(
        f"TensorBoard {VERSION} at http://{shown}:{port}/ (Press CTRL+C to quit)",
        file=sys.stderr,
        flush=True,
    )

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
