"""fedgraph_sim.atomic_files: a file written whole or not at all, on a disk that really fills."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fedgraph_sim.atomic_files import write_text_atomically

ROOT = Path(__file__).resolve().parents[2]
FULL_DISK = r"""
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
disk = sys.argv[2]
assert libc.mount(b"tmpfs", disk.encode(), b"tmpfs", 0, b"size=16k") == 0, ctypes.get_errno()
from fedgraph_sim.rows.summary_csv import write_summary
write_summary(disk, [{"attack": "grain", "n": 1}])  # fits
before = open(os.path.join(disk, "summary.csv")).read()
try:
    write_summary(disk, [{"attack": "grain" * 50, "n": i} for i in range(400)])  # about 100 kB: does not
    raised = ""
except OSError as exc:
    raised = exc.strerror
after = open(os.path.join(disk, "summary.csv")).read()
print(json.dumps({"raised": raised, "kept": before == after, "files": sorted(os.listdir(disk))}))
"""


def test_a_write_that_fails_leaves_the_old_file_and_no_partial(tmp_path):
    path = tmp_path / "table.txt"
    write_text_atomically(path, "old")

    class Interrupted(BaseException):
        pass

    def fail(partial):
        partial.write_text("half")
        raise Interrupted

    from fedgraph_sim.atomic_files import replace_atomically

    with pytest.raises(Interrupted):
        replace_atomically(path, fail)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["table.txt"]


@pytest.mark.skipif(not shutil.which("unshare") or subprocess.run(["unshare", "--user", "--map-root-user", "--mount",
                                                                  "true"]).returncode != 0,
                    reason="needs a user and mount namespace for a small tmpfs")
def test_a_summary_on_a_disk_that_fills_is_whole_or_not_there(tmp_path):
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", FULL_DISK,
                           str(ROOT), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"raised": "No space left on device", "kept": True, "files": ["summary.csv"]}
