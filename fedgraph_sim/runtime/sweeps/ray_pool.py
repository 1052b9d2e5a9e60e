"""Sweep jobs as Ray tasks (``fedgraph-sim sweep --backend ray [--ray-address ADDR]``).

Each task runs one job (a federation or an attack cell, the same functions the local pool runs)
in a fresh interpreter on whichever node Ray picks, so torch's threads and Flower's own Ray driver
start clean as they do in the local pool. A federation's Flower actors run on the same cluster
(its ``federation.ray_address`` is set to the cluster's, unless the spec sets one), so a
federation task reserves no CPU itself and its actors take the cluster's; an attack cell reserves
one. Results, logs and done markers go to the sweep directory, which every node must see (a
shared filesystem), and resume works exactly as with the local pool. Cancelled tasks are killed
with their interpreter (it dies with the Ray worker that runs it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import Future

from fedgraph_sim.processes import spawn
from fedgraph_sim.local_ray import init_ray


def run_job(job: str, args: list) -> dict:
    """In a Ray worker: run ``job`` (a function of :mod:`.jobs`) on ``args`` in a fresh interpreter."""
    proc = spawn([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)  # dies with the Ray worker when the task is cancelled
    out, err = proc.communicate(json.dumps({"job": job, "args": args}))
    if proc.returncode != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"the job's interpreter exited with code {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1])


class RayPool:
    """The part of ``concurrent.futures.Executor`` the sweep runner uses, over Ray tasks on the
    cluster at ``address`` (None: a local Ray started for the sweep)."""

    def __init__(self, address: str | None) -> None:
        import ray

        self._ray = ray
        self._started = init_ray(address, {"OMP_NUM_THREADS": "1"})
        self.address = ray.get_runtime_context().gcs_address
        self._remote = {cpus: ray.remote(num_cpus=cpus, max_retries=0)(run_job) for cpus in (0, 1)}
        self._refs: list = []

    def submit(self, fn, *args) -> Future:
        federation = fn.__name__ == "federation_job"
        ref = self._remote[0 if federation else 1].remote(fn.__name__, list(args))
        self._refs.append(ref)
        return ref.future()

    def terminate(self) -> None:
        for ref in self._refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # finished already
                pass

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self.terminate()
        if self._started:
            self._ray.shutdown()


def _main() -> None:
    request = json.loads(sys.stdin.read())
    import torch

    from fedgraph_sim.runtime.sweeps import jobs

    torch.set_num_threads(1)
    result = getattr(jobs, request["job"])(*request["args"])
    print(json.dumps(result))


if __name__ == "__main__":
    _main()
