#!/bin/bash
# TAO job dino-train-1: entrypoint staged by tao-slurm-tui, run by bash inside the container.
for f in a b; do
  echo "$f" | tr a-z A-Z > /tmp/out.$f
done
