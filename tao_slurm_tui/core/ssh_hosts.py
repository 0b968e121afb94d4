"""The Host aliases an OpenSSH client config names (offered as choices on the set-up screen).

Pure: the caller reads the file. Patterns (``*``, ``?``, ``!``) are not hosts one can log in to
and are left out; ``Include`` is not followed (the set-up screen only suggests; the connection
itself reads the whole config through asyncssh).
"""

from __future__ import annotations

import shlex

_PATTERN_CHARS = frozenset("*?!")


def ssh_config_hosts(text: str) -> list[str]:
    """Concrete Host aliases in ``text`` (an ``ssh_config`` file), in file order, once each."""
    hosts: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, rest = line.replace("=", " ", 1).partition(" ")
        if key.lower() != "host":
            continue
        try:
            names = shlex.split(rest, comments=True)
        except ValueError:
            continue  # an unbalanced quote: ssh itself would refuse the line
        for name in names:
            if name and not _PATTERN_CHARS & set(name) and name not in hosts:
                hosts.append(name)
    return hosts
