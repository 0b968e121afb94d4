"""The sandbox's TAO 7.3 stand-in: what runs in the sandbox image in place of nvidia-tao-pytorch.

A TAO container needs GPUs and PyTorch; the sandbox has neither. This package behaves as TAO 7.3's
own code does where a researcher (and tao-slurm-tui) can see it, read from nvidia-tao-pytorch 7.3.0:

- ``entrypoint``: the network's console script (``classification_pyt train -e spec.yaml k=v ...``),
  TAO's launcher (``core/entrypoint.py``): the spec check, the subtask run as a child process whose
  output it relays, "Execution status: PASS/FAIL" logged at the end.
- ``runner``: the subtask (the child): Hydra's composition of the spec against the network's
  ``ExperimentConfig`` from NVIDIA's nvidia-tao-core (the schema tao-slurm-tui checks with), TAO's
  ``monitor_status`` decorator, and a simulated Lightning training loop (callbacks, checkpoints,
  auto-resume, SIGTERM as Lightning handles it under SLURM).
- ``status``: TAO's ``StatusLogger`` (``status.json``, JSON lines).
- ``events``: TensorBoard event files as Lightning's ``TensorBoardLogger`` writes them.
- ``tensorboard``: a ``tensorboard`` command serving a page that lists the event files.

Only the Python standard library, omegaconf and PyYAML are used. It lives under ``scripts/`` and is
copied into the image by ``scripts/sandbox-cluster``; the product never imports it.
"""
