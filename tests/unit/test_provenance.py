"""Provenance: a run directory records the commit of the code that ran."""

import subprocess
from pathlib import Path

import fedgraph_sim
from fedgraph_sim.provenance import project_version, provenance


def test_a_run_directory_records_the_projects_commit():
    version = project_version()
    assert set(version) == {"commit", "dirty"} and provenance()["project"] == version
    root = Path(fedgraph_sim.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (as in CI): its HEAD, and whether it differs from it
        assert version["commit"] == head.stdout.strip() and isinstance(version["dirty"], bool)
    else:
        assert version == {"commit": "unknown", "dirty": None}
