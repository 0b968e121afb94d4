"""CLI verbs: one module per verb, each with ``add_arguments(parser)`` and ``run(args, ctx)``.

The verbs are thin fronts over :mod:`tao_slurm_tui.services`, like the TUI.
"""

from __future__ import annotations

#: Verb name → module under ``tao_slurm_tui.commands`` (imported lazily, so ``--help`` is fast).
VERBS: dict[str, str] = {
    "render": "render",
    "submit": "submit",
    "status": "status",
    "logs": "logs",
    "cancel": "cancel",
    "doctor": "doctor",
    "creds": "creds",
    "config": "config_cmd",
    "capacity": "capacity",
    "history": "history",
    "tao": "tao",
    "compare": "compare",
    "shell": "shell",
}
