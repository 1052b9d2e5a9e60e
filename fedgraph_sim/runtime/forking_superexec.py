"""A SuperExec that forks each ClientApp task from a process that has imported everything.

Flower 1.41 runs every message a SuperNode receives as a task in a fresh ``flwr-clientapp``
process (``supernode/runtime/run_clientapp.py`` pulls one task, runs it, pushes and exits), also
under ``--isolation process``: each of a round's messages pays for importing torch, PyG, Flower
and the client code, and for loading the dataset, before it trains (about 5 s on these cores,
against well under a second of training). With ``--isolation process`` the SuperNode leaves
starting those processes to a SuperExec that polls its Runtime API for tasks; this is one.
It runs Flower's own SuperExec loop (``run_superexec``) with an executor that forks: the parent
imports the client stack and builds the run's scenario once, and each task runs Flower's own
``run_clientapp`` in a child forked from it, which exits when the task is done. Each task still
has its own process (a crash, a leak or a changed global stays in it), as Flower's isolation
promises; only the start-up is shared.

    python -m fedgraph_sim.runtime.forking_superexec --runtime-api-address 127.0.0.1:PORT \\
        [--config-file FILE] [--overrides "key=value ..."] [--parent-pid PID]

``fedgraph-sim deploy`` starts one beside each SuperNode (``deployment.py``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

POLL_SECONDS = 0.05  # how often the SuperExec asks its SuperNode for a task (Flower's default: 1 s)


class ForkingExecutor:
    """Flower's SuperExec executor interface (``get_eligible_capacity``, ``wait_for_capacity``,
    ``launch``, ``reconcile``, ``close``), launching each task in a forked child."""

    def __init__(self) -> None:
        self.children: set[int] = set()

    def get_eligible_capacity(self, supported_task_types, *, insecure=False, root_certificates_path=None):
        return supported_task_types, set()

    def wait_for_capacity(self, task_type=None, *, fab_hash=None, insecure=False, root_certificates_path=None):
        return None

    def launch(self, spec):
        from flwr.supercore.constant import TaskType
        from flwr.supercore.superexec.executor import LaunchResult

        if spec.task_type != TaskType.CLIENT_APP:
            return LaunchResult.failed(f"this SuperExec runs ClientApps only, not {spec.task_type}")
        pid = os.fork()
        if pid == 0:  # the child: Flower's own ClientApp runner, then out without the parent's exit handlers
            code = 1
            try:
                from flwr.supernode.runtime.run_clientapp import run_clientapp

                run_clientapp(runtime_api_address=spec.runtime_api_address, token=spec.token,
                              insecure=spec.insecure, certificates=None, parent_pid=spec.parent_pid,
                              runtime_dependency_install=False)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                os._exit(code)
        self.children.add(pid)
        return LaunchResult.accepted()

    def reconcile(self) -> None:
        """Reap the children that have ended."""
        for pid in list(self.children):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                self.children.discard(pid)

    def close(self) -> None:
        self.reconcile()


def warm(config_file: str | None, overrides: str) -> None:
    """Import the client stack and build the run's scenario, so every forked task starts with them."""
    import clients.turn  # noqa: F401  (torch, PyG, Flower, the client code)
    from fedgraph_sim.config import load_config
    from fedgraph_sim.runtime import apps  # noqa: F401  (the ClientApp, its mods)
    from fedgraph_sim.scenario import cached_scenario

    cached_scenario(load_config(config_file or None, shlex.split(overrides)).model_dump_json())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime-api-address", required=True)
    parser.add_argument("--config-file")
    parser.add_argument("--overrides", default="")
    parser.add_argument("--parent-pid", type=int)
    args = parser.parse_args(argv)
    warm(args.config_file, args.overrides)
    from flwr.supercore.superexec import run_superexec as superexec

    # Flower's SuperExec asks for a task once a second; a fork costs milliseconds, so ask often
    os.environ.setdefault("FLWR_SUPEREXEC_TASK_POLL_INTERVAL", str(POLL_SECONDS))
    executor = ForkingExecutor()
    superexec.get_executor = lambda *a, **kw: executor  # Flower's loop, our executor
    superexec.run_superexec(runtime_api_address=args.runtime_api_address, insecure=True, parent_pid=args.parent_pid)


if __name__ == "__main__":
    main(sys.argv[1:])
