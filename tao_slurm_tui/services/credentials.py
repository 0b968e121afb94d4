"""The NGC key → the remote enroot credentials file, without leaving a trace.

Pyxis/enroot on the compute nodes read registry credentials from
``~/.config/enroot/.credentials`` (netrc format); they do not see an ``NGC_KEY`` in the job's
environment. This module writes that file for the user.

How the key travels: only on the **stdin** of **one** remote ``bash -c SCRIPT`` process whose
command line is the fixed :data:`INSTALL_SCRIPT` (no secret in it). The script reads the key into
an unexported shell variable with the ``read`` builtin and writes it with the ``printf`` builtin,
so it never appears in any process's argv or environment, in a temp file *name*, or in shell
history (non-interactive bash keeps none). It keeps every other machine's entry already in the
file (the platform's ``cat >`` recipe destroys them) and replaces the file atomically (temp file in
the same directory, ``chmod 600``, ``mv``), under ``umask 077`` in a 0700 directory.

Locally the key lives only inside a :class:`Secret` whose ``repr``/``str`` are masked, so a
traceback that shows locals never prints it (:mod:`tao_slurm_tui.core.secrets`); exceptions raised
here carry no part of it.
"""

from __future__ import annotations

from tao_slurm_tui.core.quoting import home_path
from tao_slurm_tui.core.secrets import CREDENTIALS_PATH, Secret, validate_ngc_key
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.remote.connection import Connection, RemoteError
from tao_slurm_tui.services.disk_space import disk_full_error

__all__ = [
    "CHECK_COMMAND",
    "CREDENTIALS_PATH",
    "INSTALL_SCRIPT",
    "NGC_MACHINES",
    "Secret",
    "credentials_present",
    "install_ngc_credentials",
    "validate_ngc_key",
]

NGC_MACHINES = ("nvcr.io", "authn.nvidia.com")
"""The netrc machines the NGC key is written for by default (login ``$oauthtoken``); a profile's
``registry_hosts`` may add a site's own registry."""

INSTALL_SCRIPT = r"""set -u
umask 077
d="$HOME/.config/enroot"
f="$d/.credentials"
hosts=("$@")
[ "${#hosts[@]}" -gt 0 ] || hosts=(nvcr.io authn.nvidia.com)
mkdir -p "$d" || exit 3
chmod 700 "$d" || exit 3
key=""
IFS= read -r key || [ -n "$key" ] || exit 4
[ -n "$key" ] || exit 4
t=$(mktemp "$d/.credentials.XXXXXXXXXX") || exit 5
trap 'rm -f "$t"' EXIT
re='^[[:space:]]*machine[[:space:]]+([^[:space:]]+)'
next='^[[:space:]]*(machine|default|macdef)([[:space:]]|$)'
skip=0
{
  if [ -f "$f" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
      if [[ $line =~ $re ]]; then
        skip=0
        for h in "${hosts[@]}"; do
          if [[ ${BASH_REMATCH[1]} == "$h" ]]; then skip=1; break; fi
        done
        [ "$skip" = 1 ] && continue
      elif [[ $line =~ $next ]]; then
        skip=0
      fi
      [ "$skip" = 1 ] && continue
      printf '%s\n' "$line"
    done < "$f"
  fi
  for h in "${hosts[@]}"; do
    printf 'machine %s login $oauthtoken password %s\n' "$h" "$key"
  done
} > "$t" || exit 6
key=""
chmod 600 "$t" || exit 6
mv -f "$t" "$f" || exit 6
trap - EXIT
echo installed
"""
"""Run as ``bash -c INSTALL_SCRIPT bash HOST...`` with the key as the first line of stdin; the
hosts (the profile's ``registry_hosts``; ``nvcr.io`` and ``authn.nvidia.com`` when none are given)
are the netrc machines written (enroot matches the registry host without its port).

Only shell builtins touch the key (``read``, ``[[ ]]``, ``printf``); the external commands
(``mkdir``, ``chmod``, ``mktemp``, ``mv``) get file names only. Existing lines are filtered with
builtins too, so the old key never reaches an argv either. An NGC entry spread over several
lines (netrc allows ``machine nvcr.io`` / ``login ...`` / ``password ...``) is dropped up to the
next ``machine``/``default``/``macdef`` line, so no stray ``password`` line is left to attach
itself to the neighbouring entry.
"""

CHECK_COMMAND = "test -s " + home_path(CREDENTIALS_PATH)
"""``test -s`` on the credentials file."""

_EXIT_REASONS = {
    3: "could not create ~/.config/enroot (mode 0700) on the cluster",
    4: "the key did not arrive on the remote side",
    5: "could not create a temporary file in ~/.config/enroot",
    6: "could not write ~/.config/enroot/.credentials",
}


async def install_ngc_credentials(connection: Connection, key: str | Secret) -> None:
    """Write the NGC key into ``~/.config/enroot/.credentials`` on the cluster.

    The file ends up with every previous line except the entries of the profile's
    ``registry_hosts`` (``nvcr.io``, ``authn.nvidia.com`` by default), then one
    ``machine HOST login $oauthtoken password <key>`` line per host; mode 0600 in a
    0700 directory, replaced atomically. The key travels only on stdin (see the module doc).
    A :class:`Secret` passed in is cleared afterwards, whatever happens.

    Raises:
        BadInput: the key is empty or malformed (see :func:`validate_ngc_key`).
        OperationFailed: the cluster could not be reached or the file could not be written.
    """
    secret = validate_ngc_key(key)
    if isinstance(key, Secret):
        key.clear()
    del key
    failure = stderr = ""
    status = 0
    try:
        res = await connection.run(
            ["bash", "-c", INSTALL_SCRIPT, "bash", *connection.profile.registry_hosts],
            input=secret.reveal() + "\n",
            check=False,
            retry_on_drop=True,  # the script is idempotent
        )
        status = res.exit_status if res.exit_status is not None else -1
        ok = res.ok and "installed" in res.stdout
        stderr = res.stderr  # (file names and tools' errors only: the key stays in builtins)
    except RemoteError as exc:
        failure = str(exc)
        ok = False
    finally:
        secret.clear()
    # Raised outside the except block so no traceback context (with frames holding the
    # key as a call argument) is chained to the error.
    if failure:
        raise OperationFailed(f"Could not install the enroot credentials: {failure}")
    if not ok:
        full = await disk_full_error(
            connection,
            connection.profile,
            stderr,
            fallback="~/.config/enroot",
            then="free space there and install the key again",
        )
        if full is not None:
            raise OperationFailed(f"Could not install the enroot credentials: {full}")
        reason = _EXIT_REASONS.get(status, f"the remote script failed (exit status {status})")
        raise OperationFailed(
            f"Could not install the enroot credentials: {reason}; "
            "check your home directory's quota and permissions on the cluster."
        )


async def credentials_present(connection: Connection) -> bool:
    """Whether ``~/.config/enroot/.credentials`` exists and is not empty on the cluster.

    Raises:
        OperationFailed: the cluster could not be reached.
    """
    res = await connection.run(CHECK_COMMAND, check=False)
    return res.ok
