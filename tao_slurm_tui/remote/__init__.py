"""The remote layer: the only place that opens SSH connections (asyncssh).

One persistent :class:`~tao_slurm_tui.remote.connection.Connection` per profile, owned by the
application layer (:class:`~tao_slurm_tui.services.cluster.ClusterBackend`); login-host failover
and reconnecting live inside it. Its parts, one job per module:

- ``protocols``: what the services may ask of a connection (``Remote`` and friends, the result);
- ``connection``: state, failover, reconnect, commands (``run``, ``run_framed``);
- ``login``: logging in to one login host, every failure one sentence; ``dial``: the bounded,
  cancel-safe asyncssh connect;
- ``channel``: one command on its own channel; ``shell``: the long-lived shell of ``run_framed``;
- ``transfer``: files up and down; ``keys``: private-key checks; ``hostkeys``: known_hosts rules
  and reading a server's key; ``remembered``: the login host that worked last time;
- ``state``: the connection states and their listeners; ``errors``: the errors, one sentence each;
  ``authprobe``: which login methods a server offers;
- ``prompts``: keyboard-interactive challenges (a one-time code) put to the front's prompter;
  ``login_policy``: asked once per (re)connect, a declined code held, a shared connection first;
- ``share``: a dashboard's connection lent to the commands beside it (the client end and the
  frames), ``share_server``: the dashboard's end (``docs/MFA.md``).
"""
