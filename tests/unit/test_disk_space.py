"""A full file system or an exceeded quota, in the words of every tool and site (issue 24)."""

from __future__ import annotations

import subprocess

import pytest

from tao_slurm_tui.core import retry
from tao_slurm_tui.core.disk_space import (
    FULL,
    QUOTA,
    disk_full_kind,
    disk_full_line,
    disk_full_sentence,
    is_nearly_full,
    parse_space,
    path_in,
    role_of,
    space_command,
)


@pytest.mark.parametrize(
    ("line", "kind", "path"),
    [
        ("cat: write error: No space left on device", FULL, ""),
        ("cp: error writing '/home/u/.cache/enroot/x.tar': Disk quota exceeded", QUOTA,
         "/home/u/.cache/enroot/x.tar"),
        ("OSError: [Errno 122] Disk quota exceeded: '/lustre/u/results/model.pth'", QUOTA,
         "/lustre/u/results/model.pth"),
        ("OSError: [Errno 28] No space left on device", FULL, ""),
        ("mkdir: cannot create directory \u2018/scratch/u/tao\u2019: No space left on device",
         FULL, "/scratch/u/tao"),
        ("Could not write /home/u/tao/specs/a.json on login1: cat: write error: Disk quota "
         "exceeded; check that the directory is writable.", QUOTA, "/home/u/tao/specs/a.json"),
        ("Epoch 3/10: loss 0.41", "", ""),
    ],
)  # fmt: skip
def test_every_tool_s_words_are_recognised(line: str, kind: str, path: str) -> None:
    assert disk_full_kind(line) == kind
    if kind:
        assert path_in(line) == path
        assert disk_full_line(["epoch 1", line, "Traceback (most recent call last):"]) == line
        # The batch script's own requeue check never retries it either.
        assert retry.find_match([line], retry.NEVER_RETRY_PATTERNS) is not None


# What `space_command` prints on three kinds of site (df -Pk; lfs quota -q; quota -w).
LUSTRE = """\
@@space user alice
@@space home /home/alice
@@space df /lustre/alice/tao/results/x
lustre@o2ib:/scratch 1099511627776 549755813888 549755813888  50% /lustre
@@space lfs
     /lustre 10485760*       0 10485760       -  12034       0       0       -
@@space df /home/alice
filer:/export/home 104857600 52428800 52428800  50% /home
@@space lfs
@@space quota
Disk quotas for user alice (uid 1000):
     Filesystem  blocks   quota   limit   grace   files   quota   limit   grace
filer:/export/home  2097152  5242880 5242880            100       0       0
"""

NFS_HOME = """\
@@space user bob
@@space home /home/bob
@@space df /home/bob/tao/specs/j.json
filer:/export/home 104857600 52428800 52428800  50% /home
@@space df ~
filer:/export/home 104857600 52428800 52428800  50% /home
@@space quota
Disk quotas for user bob (uid 1001):
     Filesystem  blocks   quota   limit   grace   files   quota   limit   grace
filer:/export/home
                5242880* 5242880 5242880   none     100       0       0
"""

LOOP = """\
@@space user slurmtest
@@space home /home/slurmtest
@@space df /srv/tao-smallfs/slurmtest/tao
/dev/loop0           25844     25212         0     100% /srv/tao-smallfs
@@space df /home/slurmtest
/dev/vda         264212084 26987464  79403448      26% /
"""


def test_lustre_quota_is_read_and_told_as_the_user_s_figures() -> None:
    space = parse_space(LUSTRE)
    assert space.user == "alice" and len(space.usage) == 2
    path = "/lustre/alice/tao/results/x"
    text = disk_full_sentence(
        QUOTA, space, path, what=role_of(path, space, "/lustre/alice/tao"), then="free space"
    )
    assert text == (
        "The results file system (/lustre) is over quota for alice: 10.0 GiB used of 10 GiB; "
        "free space."
    )


def test_an_nfs_home_quota_wrapped_over_two_lines() -> None:
    space = parse_space(NFS_HOME)
    path = "/home/bob/tao/specs/j.json"
    text = disk_full_sentence(
        QUOTA, space, path, what=role_of(path, space, "/home/bob/tao"), then="free space"
    )
    assert text == (
        "Your home on the cluster (/home) is over quota for bob: 5.0 GiB used of 5 GiB; free space."
    )


def test_a_full_local_file_system_gives_df_s_figures() -> None:
    space = parse_space(LOOP)
    path = "/srv/tao-smallfs/slurmtest/tao"
    usage = space.of(path)
    assert usage is not None and is_nearly_full(usage)
    assert not is_nearly_full(space.usage[1])
    text = disk_full_sentence(FULL, space, path, what=role_of(path, space, path), then="go")
    assert text == (
        "The results file system (/srv/tao-smallfs) is full for slurmtest: 24.6 MiB used of "
        "25.2 MiB, 0 B free; go."
    )


def test_without_figures_the_sentence_still_names_the_path_and_user() -> None:
    text = disk_full_sentence(QUOTA, parse_space(""), "/x/y", what="the file system",
                              then="free space", user="carol")  # fmt: skip
    assert text == "The file system (/x/y) is over quota for carol; free space."


def test_the_probe_runs_in_a_posix_shell_and_reads_back(tmp_path: object) -> None:
    out = subprocess.run(
        ["sh", "-c", space_command(["/nonexistent/deep/path", "/tmp"])],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    space = parse_space(out)
    assert space.user and space.home
    assert {u.path for u in space.usage} >= {"/nonexistent/deep/path", "/tmp"}
    assert all(u.size > 0 and u.mount.startswith("/") for u in space.usage)
