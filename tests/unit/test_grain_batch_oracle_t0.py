"""The batch diagnostic (``experiments/grain_batch_oracle_t0.py``): its bad input is one line."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "grain_batch_oracle_t0.py"
_spec = importlib.util.spec_from_file_location("grain_batch_oracle_t0", SCRIPT)
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def test_bad_sizes_and_budgets_exit_2(capsys):
    for argv in (["--updates", "0"], ["--updates", "7", "--batch-size", "16"], ["--budget", "0"]):
        assert script.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --updates and --batch-size") and err.count("\n") == 1
