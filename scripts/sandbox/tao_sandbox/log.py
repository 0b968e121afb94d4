"""TAO's console logger (``core/tlt_logging.py``): "TAO Toolkit" records go to stderr in TAO's
colour format and, once a status logger is set, also into ``status.json`` (TAO 7.3's dual
logging: a RUNNING line, FAILURE for errors, the record's level as ``verbosity``). Lightning's
own messages go to stderr as bare text."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tao_sandbox.status import StatusLogger

COLOURS = {
    "DEBUG": "\x1b[38;20m",
    "INFO": "\x1b[38;20m",
    "WARNING": "\x1b[33;20m",
    "ERROR": "\x1b[31;20m",
}
RESET = "\x1b[0m"


def asctime() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now % 1 * 1000):03d}"


def tao_line(level: str, message: str, where: str) -> str:
    colour = COLOURS.get(level, "")
    return f"{colour}{asctime()} - [TAO Toolkit] - {level} - {message} ({where}){RESET}"


class Logger:
    def __init__(self) -> None:
        self.status: StatusLogger | None = None

    def _emit(self, level: str, message: str) -> None:
        frame = sys._getframe(2)
        where = f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        print(tao_line(level, message, where), file=sys.stderr, flush=True)
        if self.status is not None:
            self.status.write(
                status="FAILURE" if level == "ERROR" else "RUNNING",
                verbosity=level,
                message=message,
            )

    def info(self, message: str) -> None:
        self._emit("INFO", message)

    def warning(self, message: str) -> None:
        self._emit("WARNING", message)

    def error(self, message: str) -> None:
        self._emit("ERROR", message)

    @staticmethod
    def lightning(message: str, level: str = "INFO") -> None:
        # OSError: the launcher is gone (SIGTERM), nothing reads the pipe any more.
        with contextlib.suppress(OSError):
            print(message, file=sys.stderr, flush=True)


logger = Logger()
