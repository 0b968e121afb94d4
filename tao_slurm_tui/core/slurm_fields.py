"""SLURM's ``Key=value`` lines and GRES/TRES strings, read fast (pure).

``scontrol show node -o`` prints one long ``Key=value`` line per node (values may hold spaces);
GPUs appear as GRES (``Gres=gpu:a100:8(S:0-1)``, older SLURM ``GresUsed=gpu:a100:2(IDX:0-1)``)
and as TRES (``AllocTRES=cpu=8,gres/gpu=2,gres/gpu:a100=2``). A 1,000-node answer is 1,000 such
lines on every refresh, so each parse is one C-level split or find per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache

_FIELD_SPLIT_RE = re.compile(r" +(?=[A-Z][A-Za-z0-9_]*=)")


def parse_key_values(line: str) -> dict[str, str]:
    """One ``scontrol ... -o`` line as a dict.

    Values may contain spaces (``OS=Linux 6.1.0 #1 SMP``, ``Reason=GPU fell off the bus``), so
    a value runs up to the next `` Key=`` (a capitalised word directly followed by ``=``).
    One C-level split per line: a 1,000-node answer is 1,000 such lines.
    """
    fields: dict[str, str] = {}
    for chunk in _FIELD_SPLIT_RE.split(line.strip()):
        key, eq, value = chunk.partition("=")
        if eq:
            fields[key] = value.strip()
    return fields


def pick_fields(line: str, keys: tuple[str, ...], text_key: str = "") -> dict[str, str]:
    """The fields ``keys`` (and the free-text ``text_key``) of one long ``scontrol -o`` line.

    A node line carries some 40 fields of which a refresh reads a dozen, so rather than
    splitting the whole line (:func:`parse_key_values`), each wanted field is found with one
    C-level ``str.find`` of `` Key=`` and ends at the next space. Only ``text_key`` (SLURM's
    ``Reason``, printed last) may hold spaces; it runs up to the next `` Key=``. The first
    occurrence of a key wins, so a reason quoting ``State=...`` cannot shadow the real one.
    Keys the line does not have are absent.
    """
    line = " " + line.strip()
    find = line.find
    fields: dict[str, str] = {}
    for key in keys:
        at = find(f" {key}=")
        if at >= 0:
            start = at + len(key) + 2
            end = find(" ", start)
            fields[key] = line[start:] if end < 0 else line[start:end]
    if text_key:
        at = find(f" {text_key}=")
        if at >= 0:
            rest = line[at + len(text_key) + 2 :]
            fields[text_key] = _FIELD_SPLIT_RE.split(rest, maxsplit=1)[0].strip()
    return fields


# ----------------------------------------------------------------------------------- GRES / TRES

GpuCounts = dict[str, int]
"""GPU type → count; ``""`` is the untyped ``gpu:4`` form."""


def _split_outside_parens(text: str) -> Iterator[str]:
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    yield text[start:]


_COUNT_RE = re.compile(r"^(\d+)([KMGTP]?)\Z", re.IGNORECASE)
_MULTIPLIER = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def _count(text: str) -> int | None:
    match = _COUNT_RE.match(text.strip())
    if not match:
        return None
    return int(match.group(1)) * _MULTIPLIER[match.group(2).upper()]


def parse_gres(text: str) -> GpuCounts:
    """GPUs in a GRES string: ``gpu:a100:8(S:0-1),gpu:v100:2``, ``gpu:4``, ``gres:gpu:2``.

    Other GRES (``shard``, ``mps``) and ``(null)``/``N/A`` give nothing. A bare ``gpu`` or
    ``gpu:a100`` counts one, as SLURM reads it.
    """
    # The same few strings repeat on every node and job line of a big cluster.
    return dict(_parse_gres(text))


@lru_cache(maxsize=4096)
def _parse_gres(text: str) -> tuple[tuple[str, int], ...]:
    counts: GpuCounts = {}
    value = text.strip()
    if not value or value.lower() in {"(null)", "n/a", "none"}:
        return ()
    for raw in _split_outside_parens(value):
        item = re.sub(r"\(.*?\)", "", raw).strip()
        for prefix in ("gres:", "gres/"):
            if item.startswith(prefix):
                item = item[len(prefix) :]
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        kind, number = "", 1
        if len(parts) == 2:
            n = _count(parts[1])
            if n is None:
                kind = parts[1]
            else:
                number = n
        elif len(parts) >= 3:
            kind = parts[1]
            n = _count(parts[2])
            if n is None:
                continue
            number = n
        counts[kind] = counts.get(kind, 0) + number
    return tuple(counts.items())


def parse_tres(text: str) -> dict[str, int]:
    """A TRES list (``cpu=8,mem=4G,node=2,gres/gpu=4,gres/gpu:a100=4``) as name → amount.

    ``mem`` is in MB (SLURM's unit; suffixes converted). Unparsable items are dropped.
    """
    tres: dict[str, int] = {}
    value = text.strip()
    if not value or value.lower() in {"(null)", "n/a"}:
        return tres
    for item in value.split(","):
        name, sep, amount = item.strip().partition("=")
        if not sep or not name:
            continue
        number = _count(amount)
        if number is None:
            continue
        if name == "mem":
            # No suffix is MB; a suffix is bytes-based (4G = 4096 MB).
            suffix = amount.strip()[-1:].upper()
            number = number if suffix.isdigit() else number // (1024**2)
        tres[name] = number
    return tres


def gpus_from_tres(tres: Mapping[str, int]) -> GpuCounts | None:
    """GPU counts by type in a TRES dict; None when it names no GPU at all.

    ``gres/gpu`` is the total, ``gres/gpu:TYPE`` the typed part; what the types do not cover
    stays untyped.
    """
    if "gres/gpu" not in tres and not any(k.startswith("gres/gpu:") for k in tres):
        return None
    typed = {k.split(":", 1)[1]: v for k, v in tres.items() if k.startswith("gres/gpu:")}
    total = tres.get("gres/gpu", sum(typed.values()))
    counts: GpuCounts = {k: v for k, v in typed.items() if v}
    rest = total - sum(typed.values())
    if rest > 0:
        counts[""] = rest
    return counts
