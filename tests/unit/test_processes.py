"""fedgraph_sim.processes: a script that starts worker processes outside its main guard is refused
in one line saying what to add, before any process is spawned or anything written."""

import os
import signal
import subprocess
import sys
import time
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


def _wait_for(predicate, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_end_gives_sigterm_its_grace_then_kills_what_ignores_it():
    from fedgraph_sim.processes import alive, end, spawn

    polite = spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    stubborn = spawn([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                      "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout.readline().strip() == "ready"
    start = time.monotonic()
    stopped = end([polite, stubborn], grace=1.0)
    assert {polite.pid, stubborn.pid} <= stopped
    assert polite.returncode == -signal.SIGTERM and stubborn.returncode == -signal.SIGKILL
    assert 1.0 <= time.monotonic() - start < 10
    assert not alive(polite.pid) and not alive(stubborn.pid)


def test_a_spawned_process_dies_with_the_one_that_started_it():
    from fedgraph_sim.processes import alive, end, spawn

    # the middle process spawns a sleeper (die_signal SIGKILL by default) and prints its PID
    middle = spawn([sys.executable, "-c", "import subprocess, sys, time; from fedgraph_sim.processes import spawn; "
                    "p = spawn([sys.executable, '-c', 'import time; time.sleep(60)']); print(p.pid, flush=True); "
                    "time.sleep(60)"], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    sleeper = int(middle.stdout.readline())
    assert alive(sleeper) and os.getpgid(sleeper) == sleeper  # a group of its own: killing middle's spares it
    os.kill(middle.pid, signal.SIGKILL)
    _wait_for(lambda: not alive(sleeper))
    assert not alive(sleeper)
    end([middle], grace=0)
