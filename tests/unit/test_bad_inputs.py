"""Every command-line entry point turns bad input into exit code 2 and one ``error:`` line (argparse's
own usage errors also exit 2), never a traceback, and writes nothing."""

import importlib.util
from pathlib import Path

import pytest

from fedgraph_sim.runtime import cli

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "experiments" / "configs" / "reproduce" / "graphdlg_table9.yaml"
REPRODUCTION = ROOT / "experiments" / "configs" / "reproduce" / "graphdlg_table1.yaml"


def script(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


ENTRY = {"run": lambda: script("run_round"), "sweep": lambda: script("sweep"),
         "reproduce": lambda: script("reproduce"), "cli": lambda: cli.main}

RUN = ["data.dataset=synthetic", "attack.names=[random]"]
CASES = [
    ("run", RUN + ["seed=-1"]),
    ("run", RUN + [f"seed={2**64}"]),
    ("run", RUN + ["train.lr=.inf"]),
    ("run", RUN + ["attack.time_budget=.inf"]),
    ("run", RUN + ["attack.limit={random: -1}"]),
    ("run", RUN + ["attack.limit={nosuch: 1}"]),
    ("run", RUN + ["attack.names=[]"]),
    ("run", RUN + ["attack.names=[random, random]"]),
    ("run", RUN + ["attack.names=[random@x/y]"]),
    ("run", RUN + ["attack.names=[dlg]", "attack.params.dlg.iterations=-5"]),
    ("run", RUN + ["federation.num_cpus=4096"]),
    ("run", RUN + ["threat.secure_aggregation=true", "attack.clients=[0]"]),
    ("run", RUN + ["data.max_nodes=1"]),
    ("run", RUN + ["model.conv=gin"]),
    ("run", RUN + ["nope=1"]),
    ("run", RUN + ["federation.rounds"]),
    ("run", ["--config", "nope.yaml"]),
    ("sweep", ["--config", "nope.yaml"]),
    ("sweep", ["--config", str(SWEEP), "--jobs", "0"]),
    ("sweep", ["--resume", "/nonexistent"]),
    ("sweep", ["--config", str(SWEEP), "--bogus"]),
    ("reproduce", ["--config", "nope.yaml"]),
    ("reproduce", ["--config", str(REPRODUCTION), "--cases", "Nope"]),
    ("reproduce", ["--config", str(REPRODUCTION), "seed=[1"]),
    ("reproduce", ["--config", str(REPRODUCTION), "--reuse", "/nonexistent"]),
    ("cli", ["info", "NOPE"]),
    ("cli", ["info", "synthetic", "--max-nodes", "1"]),
    ("cli", ["info", "synthetic", "--max-nodes", "0"]),
    ("cli", ["report", "/nonexistent"]),
    ("cli", ["datasets", "--bogus"]),
    ("cli", ["launch"]),
]


@pytest.mark.parametrize("entry, argv", CASES, ids=[f"{e}:{' '.join(a)[-60:]}" for e, a in CASES])
def test_bad_input_exits_2_without_a_traceback(entry, argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = ENTRY[entry]()
    argv = argv + ([f"output.dir={tmp_path / 'out'}"] if entry == "run" else [])
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines and (lines[-1].startswith("error: ") or ": error: " in lines[-1]), err
    assert len(lines) == 1 or lines[0].startswith("usage:"), err
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []
