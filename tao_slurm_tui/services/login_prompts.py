"""The cluster's keyboard-interactive questions (a one-time code) as the fronts see them.

The remote layer puts a challenge to a :data:`Prompter` of the front (the dashboard's masked
modal, the CLI's terminal); the types are pure (:mod:`tao_slurm_tui.core.login_prompt`), so a
front importing them loads no SSH library. The answers are handed back and dropped: never
stored, logged or written.
"""

from __future__ import annotations

from tao_slurm_tui.core.login_prompt import LoginPrompt, Prompter, PromptLine

__all__ = ["LoginPrompt", "PromptLine", "Prompter"]
