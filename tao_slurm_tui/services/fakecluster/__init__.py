"""A fake SLURM cluster for demo mode, snapshots and the TUI tests: the world, not the program.

The real services (submitter, monitor, store, log tailer, history, capacity, doctor, credentials)
run unchanged over :class:`~tao_slurm_tui.services.fakecluster.connection.FakeConnection`, the
real :class:`~tao_slurm_tui.remote.connection.Connection` with its SSH transport replaced: every
command the services build runs in a real local ``sh`` whose ``PATH`` starts with small fake
SLURM tools (:mod:`~tao_slurm_tui.services.fakecluster.tools`) answering in SLURM's formats from
one JSON state (:mod:`~tao_slurm_tui.services.fakecluster.engine`). The cluster's file system
(``/lustre``, ``/home``) is a directory of the world (:mod:`~.world`). Linux only (GNU tools).
"""
