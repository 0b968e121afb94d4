"""A fake cluster's world: its directory, its tools on ``PATH``, its clock and its failure switches.

One :class:`World` is one cluster: ``<dir>/state.json`` (the controller, see :mod:`.engine`),
``<dir>/bin`` (the login host's fake SLURM tools and ``date``), ``<dir>/nodebin`` (what a
compute node adds), ``<dir>/fs`` (the cluster's ``/lustre`` and ``/home``). Tests and the demo
steer it from outside, as an admin or the passing of time would: :meth:`World.advance` moves a
frozen clock, :meth:`World.train` lets a running job write epochs, :meth:`World.fail` makes a
tool fail the way SLURM does, :attr:`World.link` takes the login hosts off the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from tao_slurm_tui.services.fakecluster import engine, site
from tao_slurm_tui.services.fakecluster.engine import Job, State
from tao_slurm_tui.services.fakecluster.tools import TOOLS

LinkState = Literal["up", "down"]
"""``down``: no login host answers (every dial fails as an unreachable host does)."""

NODE_TOOLS = ("hostname", "enroot", "nvidia-smi")
"""Tools only a compute node has (``srun`` puts them first on ``PATH``)."""

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


class World:
    """One fake cluster on this machine (see the module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str], *, user: str = "researcher", paced: bool = False
    ) -> None:
        """Open the world at ``path``, creating its directories and tools if they are missing.

        The path may contain only letters, digits and ``/._-``: the fake maps cluster paths
        into it inside command lines, where no quoting may be needed.

        ``paced``: the jobs move on their own, as a real cluster's do: the world is brought up
        to the clock before every command the services send (not only when a SLURM tool runs),
        so the run events the jobs write (:func:`.engine.run_event`) tell a watching monitor of
        a start or an end without squeue, and the monitor over it is paced (demo mode).
        """
        self.path = Path(path).resolve()
        """The world directory."""
        if any(not (c.isalnum() or c in "/._-") for c in str(self.path)):
            raise ValueError(f"a fake world needs a plain path, not {self.path}")
        self.root = str(self.path / "fs")
        """Where the cluster's ``/`` (its ``/lustre`` and ``/home``) lives."""
        self.user = user
        """The cluster account every command runs as."""
        self.link: LinkState = "up"
        """Whether the login hosts answer (see :class:`~.connection.FakeConnection`)."""
        self.host_keys: dict[str, str] = {}
        """Each login host's public host key (OpenSSH form); filled by the seed."""
        self.password = "demo-password"
        """The account's password (what a one-time password login needs)."""
        self.commands: list[str] = []
        """Every command line the services sent, as sent (tests may assert on them)."""
        self.delay = 0.0
        """Seconds every command waits before it runs (a slow network, for tests)."""
        self.on_dial: list[object] = []
        """Live fake SSH connections (to drop them, see :meth:`drop`)."""
        self.holds: list[tuple[str, asyncio.Event]] = []
        """Commands containing a pattern wait for its event (see :meth:`hold`)."""
        self.paced = paced
        """The jobs move on their own (see above): a monitor over this world is paced."""
        if not (self.path / engine.STATE_FILE).exists():
            self._create()
        else:
            self._tools(missing_only=True)  # a world made by an older version lacks newer ones

    # ------------------------------------------------------------------ layout

    @property
    def home(self) -> str:
        """The account's home directory on the cluster (a cluster path)."""
        return f"/home/{self.user}"

    def local(self, cluster_path: str) -> Path:
        """Where a cluster path (``/lustre/...``, ``/home/...``) is on this machine."""
        return Path(self.root + cluster_path)

    def _create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        for sub in ("bin", "nodebin", "fs/tmp", f"fs/home/{self.user}/.ssh", "fs/lustre"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        self._tools()
        state = engine.empty_state(self.root, self.user)
        (self.path / engine.STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
        self._clock_tools(state)

    def _tools(self, *, missing_only: bool = False) -> None:
        """Put every fake tool on the login host's or the nodes' ``PATH``."""
        for name in TOOLS:
            path = self.path / ("nodebin" if name in NODE_TOOLS else "bin") / name
            if missing_only and path.exists():
                continue
            self._script(
                path,
                f"#!{sys.executable} -IS\nimport sys\nsys.path.insert(0, {_PACKAGE_PARENT!r})\n"
                "from tao_slurm_tui.services.fakecluster.tools import main\n"
                f"main({name!r})\n",
            )
        # TensorBoard on the nodes: a server, so not a tool under the state's lock.
        tensorboard = self.path / "nodebin" / "tensorboard"
        if not (missing_only and tensorboard.exists()):
            self._script(
                tensorboard,
                f"#!{sys.executable} -IS\nimport sys\nsys.path.insert(0, {_PACKAGE_PARENT!r})\n"
                "from tao_slurm_tui.services.fakecluster.tensorboard_tool import main\n"
                "sys.exit(main(sys.argv[1:]))\n",
            )

    @staticmethod
    def _script(path: Path, text: str) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        tmp.replace(path)

    def _clock_tools(self, state: State) -> None:
        """``date`` on the login host tells the cluster's time (a frozen one too)."""
        real = shutil.which("date", path="/usr/bin:/bin") or "/bin/date"
        frozen = state["clock"].get("frozen")
        offset = float(state["clock"].get("offset", 0.0))
        if frozen is not None:
            when = f'-d "@{int(frozen)}"'
        elif offset:
            when = f'-d "@$(( $({real} +%s) + {int(offset)} ))"'
        else:
            when = ""
        # Only a date without -d/-r/-s is moved: "date +FORMAT" is how our commands ask.
        self._script(
            self.path / "bin" / "date",
            f'#!/bin/sh\ncase " $* " in *" -d"*|*" -r"*|*" -s"*|*" --date"*) exec {real} "$@";; '
            f'esac\nexec {real} {when} "$@"\n',
        )

    def env(self) -> dict[str, str]:
        """The environment a command of the login host runs with."""
        home = self.root + self.home
        return {
            "PATH": f"{self.path / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "USER": self.user,
            "LOGNAME": self.user,
            "SHELL": "/bin/sh",
            "TMPDIR": self.root + "/tmp",
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            engine.WORLD_VARIABLE: str(self.path),
        }

    # ------------------------------------------------------------------ the state

    @contextlib.contextmanager
    def edit(self) -> Iterator[State]:
        """The cluster's state, to read or change (under the tools' lock); brought up to the
        clock first, as any tool call would."""
        with engine.locked(str(self.path)) as state:
            engine.catch_up(state)
            yield state

    def move_on(self) -> None:
        """Bring the jobs up to the clock now, when they move on their own (:attr:`paced`):
        before each command, since a real cluster's jobs run whether or not a tool asks."""
        if self.paced:
            with self.edit():
                pass

    def job(self, name_or_id: str) -> Job:
        """A copy of the latest SLURM job with this id or name (KeyError if none)."""
        with self.edit() as state:
            jobs = state["jobs"]
            found = jobs.get(name_or_id) or next(
                (j for j in sorted(jobs.values(), key=lambda j: -int(j["id"]))
                 if j["name"] == name_or_id),
                None,
            )  # fmt: skip
        if found is None:
            raise KeyError(name_or_id)
        return dict(found)

    def now(self) -> float:
        """The cluster's clock."""
        with engine.locked(str(self.path), write=False) as state:
            return engine.now(state)

    def freeze(self, moment: float | None) -> None:
        """Stop the cluster's clock at ``moment`` (None: let it run with the real one)."""
        with engine.locked(str(self.path)) as state:
            state["clock"] = {"frozen": moment, "offset": 0.0}
            self._clock_tools(state)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass on the cluster (jobs start, train and end as they would)."""
        with engine.locked(str(self.path)) as state:
            clock = state["clock"]
            if clock.get("frozen") is not None:
                clock["frozen"] = float(clock["frozen"]) + seconds
            else:
                clock["offset"] = float(clock.get("offset", 0.0)) + seconds
            self._clock_tools(state)
            engine.catch_up(state)

    def train(self, name_or_id: str, epochs: int = 1) -> None:
        """Let a running job write ``epochs`` more epochs (its status.json and main.out) now."""
        job_id = self.job(name_or_id)["id"]
        with self.edit() as state:
            job = state["jobs"][job_id]
            if job["state"] != "RUNNING" or not job.get("train"):
                raise ValueError(f"job {name_or_id} is not a running TAO job")
            job["train"]["bumps"] += epochs
            engine.catch_up(state)

    def fail(self, tool: str, how: str = "fail") -> None:
        """Make ``tool`` (``squeue``, ``sacct``, ``sbatch``, ``scancel``, ``scontrol``,
        ``sacctmgr``; ``squeue-garbage``, ``sacct-garbage``) fail as SLURM does when its daemon
        is down, or (``sbatch``) refuse with the message ``how``."""
        with engine.locked(str(self.path)) as state:
            state.setdefault("switches", {})[tool] = how

    def heal(self, tool: str | None = None) -> None:
        """Undo :meth:`fail` for ``tool`` (None: every tool)."""
        with engine.locked(str(self.path)) as state:
            if tool is None:
                state["switches"] = {}
            else:
                state.setdefault("switches", {}).pop(tool, None)

    def gpu_load(self, name_or_id: str, *lines: str) -> None:
        """Set what nvidia-smi reports for a running job's GPUs, as the sandbox's load files do:
        ``"all 87 30000"``, ``"1 5 100"`` (index within the job, utilisation %, MiB used); no
        lines: idle."""
        job_id = self.job(name_or_id)["id"]
        with engine.locked(str(self.path)) as state:
            state.setdefault("gpu_load", {})[job_id] = list(lines)

    def set(self, **settings: object) -> None:
        """Change cluster-wide settings (``start_delay``, ``min_job_age``, ``max_epoch``,
        ``epoch_seconds``, ``enforce``, ``pyxis``, ``wait``...)."""
        with engine.locked(str(self.path)) as state:
            state.update(settings)

    # ------------------------------------------------------------------ the site's admins

    def reserve(
        self,
        name: str,
        start: float,
        end: float,
        nodes: str = "ALL",
        flags: str = "MAINT,IGNORE_JOBS",
        users: str = "root",
    ) -> None:
        """An admin's reservation of ``nodes`` (comma list or ``ALL``) from ``start`` to ``end``
        on the cluster's clock (a maintenance window by default; see :mod:`.site`)."""
        with self.edit() as state:
            site.reserve(state, name, start, end, nodes, flags, users)

    def unreserve(self, name: str) -> None:
        """An admin deletes a reservation (a maintenance called off or finished early)."""
        with self.edit() as state:
            state["reservations"] = [r for r in state.get("reservations", []) if r["name"] != name]

    def drain(self, node: str, reason: str, *, by: str = "admin", down: bool = False) -> None:
        """An admin drains ``node`` (``down``: sets it DOWN) with ``reason``, now."""
        with self.edit() as state:
            site.drain(state, node, reason, by, engine.stamp(engine.now(state)), down)

    def resume(self, node: str) -> None:
        """An admin puts ``node`` back in service."""
        with self.edit() as state:
            site.resume(state, node)

    # ------------------------------------------------------------------ the network

    def hold(self, pattern: str) -> asyncio.Event:
        """Make every command containing ``pattern`` wait until the returned event is set (a
        slow cluster: the answer comes when the test says so)."""
        event = asyncio.Event()
        self.holds.append((pattern, event))
        return event

    def drop(self) -> None:
        """Drop every open SSH connection to this cluster (as a network blip would)."""
        for conn in list(self.on_dial):
            drop = getattr(conn, "drop", None)
            if drop is not None:
                drop()
