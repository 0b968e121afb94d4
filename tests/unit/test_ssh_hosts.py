"""Host aliases offered by the set-up screen from ~/.ssh/config."""

from __future__ import annotations

from tao_slurm_tui.core.ssh_hosts import ssh_config_hosts


def test_concrete_aliases_in_order_patterns_left_out() -> None:
    text = """
# my clusters
Host hpc hpc-login2
    HostName login.hpc.example.org
    User alice
Host *.internal !bastion
    ProxyJump bastion
Host=bastion
  Port 2200
host "with space" hpc
Match host foo
    User bob
Host ?oops
"""
    assert ssh_config_hosts(text) == ["hpc", "hpc-login2", "bastion", "with space"]


def test_empty_and_broken_lines() -> None:
    assert ssh_config_hosts("") == []
    assert ssh_config_hosts('Host "unbalanced\nHost ok') == ["ok"]
