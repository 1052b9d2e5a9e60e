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
    ("run", RUN + ["model.conv=gine"]),
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
    ("cli", ["attacks", "--plugin", "no_such_plugin_mod"]),
    ("cli", ["attacks", "--plugin", "tests.unit.plugin_without_keeps_state"]),
    ("cli", ["deploy", "--role", "bogus", *RUN]),
    ("cli", ["deploy", "--superlink", "nohost", *RUN]),
    ("cli", ["deploy", "--partitions", "0,7", *RUN]),
    ("cli", ["deploy", *RUN, "seed=-1"]),
    # {bad} is a folder of broken inputs made once (fixtures below); nothing may appear in the cwd
    ("run", RUN + ["output.dir={bad}/file.txt"]),
    ("run", RUN + ["aux.scenario=random:ba"]),
    ("run", ["--config", "{bad}/broken.yaml"]),
    ("sweep", ["--config", str(SWEEP), "--out", "{bad}/file.txt"]),
    ("sweep", ["--config", "{bad}/base_list.yaml"]),
    ("sweep", ["--config", "{bad}/victims_text.yaml"]),
    ("sweep", ["--config", "{bad}/reference_unknown.yaml"]),
    ("sweep", ["--config", "{bad}/reference_nowhere.yaml"]),
    ("sweep", ["--resume", "{bad}/corrupt"]),
    ("reproduce", ["--config", "{bad}/broken.yaml"]),
    ("reproduce", ["--config", "{bad}/no_label.yaml"]),
    ("run", RUN + ["data.options={min_nodes: abc}"]),
    ("run", RUN + ["data.options={max_nodes: 3}"]),
    ("run", RUN + ["federation.rounds=true"]),
    ("run", RUN + ["train.lr=false"]),
    ("run", RUN + ["attack.clients=[true]"]),
    ("run", ["--config", "{bad}/binary.bin"]),
    ("run", ["--config", "{bad}/huge.yaml"]),
    ("run", ["--config", "{bad}"]),
    ("run", RUN + ["output.dir={bad}/loop_a"]),
    ("run", RUN + ["output.dir={bad}/dangling/runs"]),
    ("run", RUN + ["output.dir={bad}/file.txt/runs"]),
    ("sweep", ["--config", "{bad}"]),
    ("sweep", ["--config", "{bad}/binary.bin"]),
    ("sweep", ["--config", "{bad}/slash_name.yaml"]),
    ("sweep", ["--config", "{bad}/params_not_run.yaml"]),
    ("reproduce", ["--config", "{bad}/binary.bin"]),
    ("reproduce", ["--config", "{bad}/extends_dir.yaml"]),
]

BROKEN = {
    "file.txt": "not a directory\n",
    "broken.yaml": "a: [1\n",
    "base_list.yaml": "name: s\nbase: [1, 2]\n",
    "victims_text.yaml": "name: s\nvictim_graphs: ten\nbase: {data: {dataset: synthetic}}\n",
    "reference_unknown.yaml": "name: s\nreference: graphdlg_table99\nbase: {data: {dataset: synthetic}}\n",
    "reference_nowhere.yaml": "name: s\nreference: nopaper_table1\nbase: {data: {dataset: synthetic}}\n",
    "corrupt/sweep.yaml": "name: [\n",
    "no_label.yaml": "base: {}\ncases: [{set: {seed: 1}}]\n",
    "binary.bin": b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)),  # what --config /bin/ls reads
    "huge.yaml": "a: " + "x" * (2 << 20) + "\n",
    "slash_name.yaml": "name: a/b\nbase: {data: {dataset: synthetic}}\naxes: {attacks: [random]}\n",
    "params_not_run.yaml": ("name: s\nbase: {data: {dataset: synthetic}, attack: {params: {dlg: {bogus: 1}}}}\n"
                            "axes: {attacks: [random]}\n"),
    "extends_dir.yaml": "extends: corrupt\nbase: {}\ncases: []\n",
}
LINKS = {"loop_a": "loop_b", "loop_b": "loop_a", "dangling": "/nonexistent/fedgraph_sim_target"}


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    for name, text in BROKEN.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    for name, target in LINKS.items():
        (folder / name).symlink_to(target)
    return folder


@pytest.mark.parametrize("entry, argv", CASES, ids=[f"{e}:{' '.join(a)[-60:]}" for e, a in CASES])
def test_bad_input_exits_2_without_a_traceback(entry, argv, capsys, tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    main = ENTRY[entry]()
    before = sorted(p.relative_to(bad) for p in bad.rglob("*"))  # rglob does not follow the links
    argv = [a.replace("{bad}", str(bad)) for a in argv]
    if entry == "run" and not any(a.startswith("output.dir=") for a in argv):
        argv.append(f"output.dir={tmp_path / 'out'}")
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
    assert sorted(p.relative_to(bad) for p in bad.rglob("*")) == before  # nothing added or lost


def test_an_unwritable_dataset_cache_is_one_line(tmp_path, monkeypatch, capsys):
    """``FEDGRAPH_CACHE`` where nothing can be written: the dataset's raw files cannot be copied
    there, which is said in one line (a traceback from ``os.makedirs`` before)."""
    raw = tmp_path / "root" / "tu" / "PTC_MR" / "raw"
    raw.mkdir(parents=True)
    (raw / "PTC_MR_A.txt").write_text("1, 2\n")
    monkeypatch.setenv("FEDGRAPH_DATA_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("FEDGRAPH_CACHE", "/proc/fedgraph_sim_cache")
    assert cli.main(["info", "PTC_MR"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: FEDGRAPH_CACHE: cannot write /proc/fedgraph_sim_cache") and "\n" not in err
