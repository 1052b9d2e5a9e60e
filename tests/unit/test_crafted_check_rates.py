"""``experiments/crafted_check_rates.py``: flagged client turns per run, one row per turn."""

import importlib.util
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("crafted_check_rates", ROOT / "experiments" / "crafted_check_rates.py")
rates_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rates_script)


def test_turns_are_counted_once_and_bad_runs_are_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"round": r, "client": c, "graph_id": g, "defense_crafted_flag": float(r == 2 and c == 0),
             "defense_dead_fraction": 0.1 * c, "defense_zero_fraction": 0.0}
            for r in (1, 2) for c in (0, 1) for g in (0, 1)]  # two graphs per turn
    pd.DataFrame(rows).to_parquet(run / "results.parquet")
    found = rates_script.rates(run)
    assert (found["turns"], found["flagged"]) == (4, 1) and found["flagged %"].startswith("25.0 [")
    assert rates_script.main([str(run)]) == 0 and "| run | 4 | 1 |" in capsys.readouterr().out
    assert rates_script.main([str(tmp_path / "missing")]) == 2
    assert "runs: no results.parquet in" in capsys.readouterr().err
