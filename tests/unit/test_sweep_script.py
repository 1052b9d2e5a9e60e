import importlib.util
from pathlib import Path

import yaml

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "sweep.py"
spec = importlib.util.spec_from_file_location("sweep_script", SCRIPT)
sweep_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep_script)

SPEC = {"name": "t", "base": {"data": {"dataset": "synthetic", "options": {"num_graphs": 40}},
                              "federation": {"num_clients": 2}}, "axes": {"attacks": ["random"]}}


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_out_that_is_a_file_is_refused_and_kept(tmp_path, capsys):
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump(SPEC))
    out = tmp_path / "results.txt"
    out.write_text("keep me")
    assert sweep_script.main(["--config", str(config), "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --out: {out} is a file, not a sweep directory"
    assert out.read_text() == "keep me"


def test_resume_on_a_corrupt_sweep_yaml_is_one_line(tmp_path, capsys):
    (tmp_path / "sweep.yaml").write_text("name: t\nbase: {data: [\n")
    assert sweep_script.main(["--resume", str(tmp_path)]) == 2
    assert one_error_line(capsys).startswith(f"error: --resume: {tmp_path / 'sweep.yaml'} is not valid YAML")
    assert (tmp_path / "sweep.yaml").read_text() == "name: t\nbase: {data: [\n"
