"""The remote layer: the only place that opens SSH connections (asyncssh).

One persistent :class:`~tao_slurm_tui.remote.connection.Connection` per profile, owned by the
application layer (:class:`~tao_slurm_tui.services.cluster.ClusterBackend`); login-host failover
lives inside it. Host-key helpers are in :mod:`tao_slurm_tui.remote.hostkeys`.
"""
