"""Flower's Deployment Engine from one command: a SuperLink and one SuperNode per client as
separate OS processes, the project's ServerApp and ClientApp submitted with ``flwr run``, and
every process it started stopped at the end (on success, on failure and on Ctrl-C or SIGTERM).

The apps run in this environment, never in one Flower builds: the SuperLink starts with
``--disable-runtime-dependency-installation`` and SuperNodes install nothing unless told to, so
``flwr run`` neither calls ``uv sync`` nor downloads a CUDA torch. The connection is written to a
``config.toml`` under a launcher-owned ``FLWR_HOME`` (the current form; ``[tool.flwr.federations]``
in ``pyproject.toml`` is deprecated). Each SuperNode's ``--node-config`` carries its
``partition-id`` and ``num-partitions``; the run directory is fixed before submission and passed
as the ``run-dir`` run-config key, and the processes' logs go to ``<run dir>/deployment/``.

Roles (``role``): ``all`` starts the SuperLink, every SuperNode and the run on this host;
``superlink`` the SuperLink and the run (the SuperNodes connect from other hosts);
``supernodes`` only the SuperNodes of ``partitions``, which serve until interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from fedgraph_sim.config import RunConfig
from fedgraph_sim.errors import ConfigError
from fedgraph_sim.processes import descendants, end, spawn
from fedgraph_sim.run_dirs import new_run_dir
from fedgraph_sim.runtime.simulation import FLOWER_ENV

ROLES = ("all", "superlink", "supernodes")
#: Who starts a SuperNode's ClientApp processes: our forking SuperExec, or Flower's own (a fresh
#: process per task).
CLIENTAPP_LAUNCHERS = ("forked", "flower")
#: How long a SuperLink may take to accept connections.
STARTUP_SECONDS = 60.0
#: How long a process gets between SIGTERM and SIGKILL.
STOP_SECONDS = 10.0
PROJECT_DIR = Path(__file__).resolve().parents[2]  # the directory whose pyproject.toml holds the app


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_address(address: str | None) -> tuple[str, int]:
    """``HOST:PORT`` (``None``: loopback on a free port)."""
    if address is None:
        return "127.0.0.1", free_port()
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--superlink: '{address}' is not HOST:PORT (e.g. 127.0.0.1:9100)")
    return host, int(port)


@dataclass
class Processes:
    """The processes a launch started (each the leader of its own process group), their logs,
    and every PID seen below them; :meth:`stop` ends them all."""

    log_dir: Path
    env: dict
    started: list[subprocess.Popen] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    _logs: list[TextIO] = field(default_factory=list)

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "a")
        self._logs.append(log)
        log.write(f"$ {shlex.join(command)}\n")
        log.flush()
        proc = spawn(command, die_signal=signal.SIGTERM, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                     cwd=self.log_dir)
        self.started.append(proc)
        self.seen.add(proc.pid)
        return proc

    def pids(self) -> set[int]:
        """Every PID started so far, and every one seen below them."""
        for proc in self.started:
            self.seen.update(descendants(proc.pid))
        return set(self.seen)

    def stop(self) -> set[int]:
        """SIGTERM to every process group started (SIGKILL after :data:`STOP_SECONDS`) and to
        every descendant that left its group; returns the PIDs it saw (also written to ``pids``
        in the log directory)."""
        pids = end(self.started, STOP_SECONDS, seen=self.pids())
        for log in self._logs:
            log.close()
        (self.log_dir / "pids").write_text("".join(f"{pid}\n" for pid in sorted(pids)))
        return pids


def flwr_home(directory: Path, host: str, port: int) -> Path:
    """A Flower home with one connection, ``fedgraph``, to the SuperLink at ``host:port``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.toml").write_text(
        '[superlink]\ndefault = "fedgraph"\n\n[superlink.fedgraph]\n'
        f'address = "{host}:{port}"\ninsecure = true\n')
    return directory


def wait_for_port(host: str, port: int, proc: subprocess.Popen, seconds: float = STARTUP_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the SuperLink exited with code {proc.returncode} while starting")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the SuperLink did not accept connections on {host}:{port} within {seconds:g} s")


@dataclass
class Launch:
    """What one ``fedgraph-sim deploy`` does. ``config_file`` and ``overrides`` are passed to the
    apps as they are (the run config's ``config-file`` and ``overrides``)."""

    config: RunConfig
    config_file: Path
    overrides: list[str]
    run_dir: Path | None = None  # None: a new one under output.dir, once the arguments are checked
    role: str = "all"
    superlink: str | None = None
    partitions: list[int] | None = None
    clientapps: str = "forked"  # forked | flower (CLIENTAPP_LAUNCHERS)
    echo: Callable[[str], None] = lambda line: print(line, end="", flush=True)

    def __post_init__(self) -> None:
        if not (PROJECT_DIR / "pyproject.toml").is_file():
            raise ConfigError(f"deploy: flwr run ships the apps from the source checkout; {PROJECT_DIR} has no "
                              "pyproject.toml (install the project with pip install -e)")
        if self.role not in ROLES:
            raise ConfigError(f"--role: unknown '{self.role}'; valid: {', '.join(ROLES)}")
        if self.clientapps not in CLIENTAPP_LAUNCHERS:
            raise ConfigError(f"--clientapps: unknown '{self.clientapps}'; valid: {', '.join(CLIENTAPP_LAUNCHERS)}")
        self.host, self.port = parse_address(self.superlink)
        k = self.config.federation.num_clients
        self.partitions = list(range(k)) if self.partitions is None else self.partitions
        bad = [p for p in self.partitions if not 0 <= p < k]
        if bad:
            raise ConfigError(f"--partitions: {bad} outside 0..{k - 1} (federation.num_clients is {k})")
        if self.run_dir is None:
            self.run_dir = new_run_dir(Path(self.config.output.dir).resolve(), self.config.name)
        self.log_dir = self.run_dir / "deployment"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **FLOWER_ENV, "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        env["FLWR_HOME"] = str(flwr_home(self.log_dir / "flwr", self.host, self.port))
        self.processes = Processes(self.log_dir, env)

    def start_superlink(self) -> None:
        with socket.socket() as probe:
            try:
                probe.bind((self.host, self.port))
            except OSError as exc:
                raise RuntimeError(f"the SuperLink cannot listen on {self.host}:{self.port} ({exc.strerror})") from None
        proc = self.processes.start("superlink", [
            "flower-superlink", "--insecure", "--host", self.host, "--port", str(self.port),
            "--disable-runtime-dependency-installation"])
        wait_for_port(self.host, self.port, proc)

    def start_supernodes(self) -> None:
        """One SuperNode per partition. With ``clientapps: forked`` each polls its SuperLink every
        0.1 s (``polling_supernode``; Flower's waits 3 s after an empty pull) and has a forking
        SuperExec beside it (``forking_superexec``: every task in its own process, forked from one
        that has imported the client stack and loaded the data); with ``flower``, Flower's own
        SuperNode starts a fresh ``flwr-clientapp`` process per task."""
        k = self.config.federation.num_clients
        forked = self.clientapps == "forked"
        supernode = [sys.executable, "-m", "fedgraph_sim.runtime.polling_supernode"] if forked else ["flower-supernode"]
        for p in self.partitions:
            runtime_port = free_port()
            node = self.processes.start(f"supernode-{p}", [
                *supernode, "--insecure", "--superlink", f"{self.host}:{self.port}",
                "--isolation", "process" if forked else "subprocess",
                "--port", str(runtime_port), "--node-config", f"partition-id={p} num-partitions={k}"])
            if not forked:
                continue
            self.processes.start(f"superexec-{p}", [
                sys.executable, "-m", "fedgraph_sim.runtime.forking_superexec",
                "--runtime-api-address", f"127.0.0.1:{runtime_port}", "--parent-pid", str(node.pid),
                "--config-file", str(self.config_file), "--overrides", shlex.join(self.overrides)])

    def submit(self) -> int:
        """``flwr run`` of this project's apps, its output streamed; its exit code."""
        run_config = " ".join(f"{key}={json.dumps(value)}" for key, value in (
            ("config-file", str(self.config_file)), ("overrides", shlex.join(self.overrides)),
            ("run-dir", str(self.run_dir))))
        command = ["flwr", "run", str(PROJECT_DIR), "fedgraph", "--stream", "--run-config", run_config]
        proc = self.processes.start("flwr-run", command)
        log = self.log_dir / "flwr-run.log"
        with open(log) as stream:
            while True:
                line = stream.readline()
                if line:
                    self.echo(line)
                elif proc.poll() is not None:
                    break
                else:
                    time.sleep(0.1)
        return proc.returncode

    def run_status(self) -> str:
        """The SuperLink's status of the run (``flwr run --stream`` exits 0 even when it failed)."""
        out = subprocess.run(["flwr", "ls", "fedgraph", "--format", "json"], capture_output=True, text=True,
                             env=self.processes.env, cwd=self.log_dir, timeout=60)
        try:
            runs = json.loads(out.stdout).get("runs", [])
        except json.JSONDecodeError:
            return "unknown"
        return runs[-1].get("status", "unknown") if runs else "unknown"

    def __call__(self) -> str:
        """Start, run, stop; the run's status (``supernodes``: serve until interrupted)."""
        # Ctrl-C and SIGTERM stop what was started, also where SIGINT came in ignored (a job a
        # non-interactive shell put in the background inherits SIG_IGN)
        previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            if self.role in ("all", "superlink"):
                self.start_superlink()
            if self.role in ("all", "supernodes"):
                self.start_supernodes()
            if self.role == "supernodes":
                while all(p.poll() is None for p in self.processes.started):
                    time.sleep(1)
                return "supernodes stopped"
            code = self.submit()
            status = self.run_status()
            return status if code == 0 else f"flwr run exited with code {code} ({status})"
        finally:
            self.stopped = self.processes.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
