"""Starting Ray from this project: one way for the federation's backend, the sweep's pool and the
attack workers' actors.

A Ray this process starts itself (``address`` None) gets two settings a cluster joined at an
address keeps its own way:

- **A short GCS reconnect timeout** (``LOCAL_RAY_ENV``): when this process is killed, Ray's
  dashboard and runtime-env agents would otherwise outlive it by 60 s, retrying the GCS that died
  with it. One local machine has no network to wait out.
- **Its services in their own session**: a signal to this process's group (``kill -TERM
  -<pgid>``, a batch scheduler's stop, a test harness) must reach this process and not Ray's
  services. A raylet ended by it ends the plasma store, and Ray's core worker here then exits the
  process with status 1 ("The connection to the plasma store is failed. Terminate the process")
  while the stop is still writing its summary (seen in 1 of 4 group SIGTERMs under load). The
  services still die with this process (Ray starts them with the kernel's parent-death signal)
  and at ``ray.shutdown()``.

And ``ray.init`` replaces the SIGTERM handler by ``sys.exit``; :func:`init_ray` puts back the one
it found, so a stop still goes through the command's own handler.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

#: The environment of a Ray started here.
LOCAL_RAY_ENV = {"RAY_gcs_rpc_server_reconnect_timeout_s": "5"}


def prepare_local_ray(address: str | None) -> None:
    """Before ``ray.init`` (or a library's call of it): set up a Ray started here (``address``
    None); a cluster joined at ``address`` is left as it is.

    Args:
        address (str, optional): the Ray cluster to join; None starts one here, which gets
            :data:`LOCAL_RAY_ENV` (unless set already) and its services in their own session.
    """
    if address is None:
        for key, value in LOCAL_RAY_ENV.items():
            os.environ.setdefault(key, value)
        _services_in_their_own_session()


def init_ray(address: str | None, env_vars: dict[str, str] | None = None) -> bool:
    """Start a Ray (``address`` None) or join one, unless this process is connected already; the
    workers import from where this process does (its ``sys.path``) and get ``env_vars``. Returns
    whether this call connected, so the caller knows it is the one to shut it down.

    Args:
        address (str, optional): the Ray cluster to join; None starts one here.
        env_vars (dict[str, str], optional): environment variables of the workers, besides
            ``PYTHONPATH``. (default: :obj:`None`)
    """
    import ray

    if ray.is_initialized():
        return False
    prepare_local_ray(address)
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    ray.init(address=address, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path), **(env_vars or {})}})
    if sigterm is not None:
        signal.signal(signal.SIGTERM, sigterm)
    return True


def _services_in_their_own_session() -> None:
    """Start Ray's service processes (GCS, raylet, dashboard, ...) with ``setsid`` (idempotent)."""
    from ray._private import services

    if getattr(services.ConsolePopen, "own_session", False) or os.name != "posix":
        return

    class OwnSessionPopen(services.ConsolePopen):
        own_session = True

        def __init__(self, *args, **kwargs) -> None:
            kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = OwnSessionPopen
