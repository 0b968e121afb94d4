"""The remote layer: the only place that opens SSH connections (asyncssh).

Use :class:`tao_slurm_tui.remote.connection.ConnectionManager` for one persistent
:class:`~tao_slurm_tui.remote.connection.Connection` per profile; host-key helpers are in
:mod:`tao_slurm_tui.remote.hostkeys`.
"""
