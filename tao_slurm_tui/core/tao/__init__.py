"""What the product knows about NVIDIA TAO, as pure rules over NVIDIA's own data.

- :mod:`.pydata`: module-level literals of NVIDIA's Python files, read as data (never imported).
- :mod:`.pins`: the TAO versions the product knows (``tao_slurm_tui/tao_pins.json``).
- :mod:`.catalog`: every network of a TAO version with its actions, container kind and dataset
  keys, built from ``nvidia-tao-core``'s catalogue files; images per profile.
- :mod:`.schema` and :mod:`.spec_check`: a network's experiment-spec schema (an omegaconf tree
  built from NVIDIA's dataclasses) and the check of a user's spec against it.

Loading the data (download, hash check, cache) lives in ``services/tao_*.py``; docs/TAO.md says
why it is built this way.
"""
