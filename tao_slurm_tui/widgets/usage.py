"""Usage figures as text lines, shared by the queue's detail pane and the history view."""

from __future__ import annotations

from rich.text import Text

from tao_slurm_tui.core.accounting import Usage, format_memory
from tao_slurm_tui.core.slurm_text import format_duration
from tao_slurm_tui.widgets.plain import plain


def usage_lines(usage: Usage) -> list[Text]:
    """Elapsed vs limit and queue wait; CPU efficiency and peak memory; GPU-hours; the hint."""
    elapsed = format_duration(usage.elapsed_s) or "-"
    limit = format_duration(usage.time_limit_s) or "no limit"
    share = f" ({usage.limit_fraction:.0%})" if usage.limit_fraction is not None else ""
    first = plain(f"Elapsed {elapsed} of {limit}{share}")
    if usage.queue_wait_s is not None:
        first.append(f" · waited {format_duration(usage.queue_wait_s)} in the queue")
    eff = usage.cpu_efficiency
    second = plain(
        f"CPU efficiency {eff:.0%} of {usage.alloc_cpus} CPUs"
        if eff is not None
        else f"CPU efficiency unknown ({usage.alloc_cpus} CPUs)"
    )
    if usage.peak_rss_bytes is not None:
        second.append(f" · peak memory {format_memory(usage.peak_rss_bytes)}")
    lines = [first, second]
    if usage.gpus:
        gpus = f"{usage.gpus} GPU" + ("" if usage.gpus == 1 else "s")
        lines.append(plain(f"{usage.gpu_hours:.2f} GPU-hours ({gpus} x elapsed)"))
    if usage.hint:
        lines.append(plain(f"Hint: {usage.hint}", style="bold yellow", overflow="fold"))
    return lines
