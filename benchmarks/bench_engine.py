"""Where the ClientApps run: one federation on Ray's client actors against the same federation in
the job's own process (the engine of a sweep's and an audit's federation jobs).

    python benchmarks/bench_engine.py [--config experiments/configs/audits/mutag_grain.yaml] [--repeat 2]

Each federation runs as a sweep job does (a fresh process, one torch thread, capture on, no
attacks), the two engines alternating; prints each engine's median wall time, the ratio, and
whether the updates the server observed are bit-for-bit the same (the quality both reach).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_FEDERATION = """
import sys
from pathlib import Path
import torch
torch.set_num_threads(1)
from fedgraph_sim.config import load_config
from fedgraph_sim.runtime import Session
from fedgraph_sim.runtime.simulation import run
config = load_config(sys.argv[1], ["attack.names=[]", "attack.rounds=[1,2,25,50]"])
run(config, session=Session(config, capture=True), run_dir=Path(sys.argv[2]), engine=sys.argv[3])
"""


def _same_updates(a: Path, b: Path) -> bool:
    import torch

    from fedgraph_sim.capture import CaptureStore

    left, right = CaptureStore(a), CaptureStore(b)
    if left.rounds() != right.rounds():
        return False
    for round_ in left.rounds():
        (xs, _), (ys, _) = left.read(round_), right.read(round_)
        if len(xs) != len(ys) or any(not torch.equal(torch.as_tensor(x.returned[k]), torch.as_tensor(y.returned[k]))
                                     for x, y in zip(xs, ys) for k in x.returned):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "audits" / "mutag_grain.yaml"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {"ray": [], "in_process": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for engine in seconds:
                start = time.monotonic()
                subprocess.run([sys.executable, "-c", ONE_FEDERATION, args.config, f"{tmp}/{engine}{i}", engine],
                               cwd=ROOT, check=True, capture_output=True)
                seconds[engine].append(time.monotonic() - start)
        same = _same_updates(Path(tmp) / "ray0", Path(tmp) / "in_process0")
    ray, here = statistics.median(seconds["ray"]), statistics.median(seconds["in_process"])
    print(f"one federation of {args.config} (process start included), median of {args.repeat}:")
    print(f"  ray          {ray:6.1f} s  {[round(s, 1) for s in seconds['ray']]}")
    print(f"  in_process   {here:6.1f} s  {[round(s, 1) for s in seconds['in_process']]}")
    print(f"  ratio ray / in_process: {ray / here:.2f}; observed updates identical: {same}")


if __name__ == "__main__":
    main()
