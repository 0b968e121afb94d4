"""Resource shaping: exclusive nodes at the per-node maximum, CPUs for every rank."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.shaping import Shape, shape_resources


def test_defaults_single_node_four_gpus() -> None:
    shape = shape_resources(1, 4, 16)
    assert shape == Shape(nodes=1, gpus_per_node=4, cpus_per_task=64, exclusive=False)
    assert shape.ntasks == 1
    assert not shape.multi_node


def test_sixteen_gpus_on_one_node_become_two_exclusive_nodes_of_eight() -> None:
    shape = shape_resources(1, 16, 16)
    assert (shape.nodes, shape.gpus_per_node, shape.exclusive) == (2, 8, True)
    assert shape.ntasks == 2
    assert shape.total_gpus == 16
    assert shape.multi_node


def test_exactly_the_node_maximum_is_exclusive() -> None:
    shape = shape_resources(1, 8, 16)
    assert (shape.nodes, shape.gpus_per_node, shape.exclusive) == (1, 8, True)
    assert shape.cpus_per_task == 128  # 16 x 8 = 128, the cap


def test_node_count_is_computed_from_the_total() -> None:
    assert shape_resources(2, 8, 16).nodes == 2
    assert shape_resources(2, 16, 16).nodes == 4
    # 12 GPUs do not fill two nodes; exclusive nodes round up.
    assert shape_resources(1, 12, 16).nodes == 2


def test_custom_node_size() -> None:
    shape = shape_resources(1, 8, 4, max_gpus_per_node=4)
    assert (shape.nodes, shape.gpus_per_node, shape.exclusive) == (2, 4, True)


def test_below_the_maximum_multi_node_is_not_exclusive() -> None:
    shape = shape_resources(3, 4, 16)
    assert (shape.nodes, shape.gpus_per_node, shape.exclusive) == (3, 4, False)
    # The CPU product is for single-node jobs only.
    assert shape.cpus_per_task == 16


@pytest.mark.parametrize(
    ("gpus", "cpus", "cap", "expected"),
    [
        (1, 16, 128, 16),
        (2, 16, 128, 32),
        (4, 16, 128, 64),
        (4, 64, 128, 128),
        (4, 16, 32, 32),
        (2, 200, 128, 200),  # never below what was asked
        (0, 8, 128, 8),
    ],
)
def test_single_node_cpus_are_multiplied_and_capped(
    gpus: int, cpus: int, cap: int, expected: int
) -> None:
    assert shape_resources(1, gpus, cpus, max_cpus_per_task=cap).cpus_per_task == expected


def test_no_gpus() -> None:
    shape = shape_resources(1, 0, 2)
    assert shape.gpus_per_node == 0
    assert not shape.exclusive


@pytest.mark.parametrize(("nodes", "gpus", "cpus"), [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_invalid_counts(nodes: int, gpus: int, cpus: int) -> None:
    with pytest.raises(ValueError):
        shape_resources(nodes, gpus, cpus)
