"""fedgraph_sim.processes: a script that starts worker processes outside its main guard is refused
in one line saying what to add, before any process is spawned or anything written."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SWEEP = """from fedgraph_sim.runtime import sweep
spec = {"name": "guard", "base": {"data": {"dataset": "synthetic"}, "federation": {"num_clients": 2}},
        "axes": {"attacks": ["random"]}}
"""


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "my_sweep.py"
    script.write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_sweep_at_a_scripts_top_level_is_refused_before_anything_is_written(tmp_path):
    done = _script(tmp_path, SWEEP + "sweep(spec, out_dir='out')\n")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "my_sweep.py:4: fedgraph_sim.runtime.sweep() starts worker processes" in last
    assert "put the call under 'if __name__ == \"__main__\":'" in last
    assert not (tmp_path / "out").exists()


def test_the_guard_is_read_from_the_script():
    import ast

    from fedgraph_sim.processes import _under_main_guard

    tree = ast.parse("x = 1\nif __name__ == '__main__':\n    run()\n    more()\nrun()\n")
    assert [_under_main_guard(tree, line) for line in (1, 3, 4, 5)] == [False, True, True, False]
