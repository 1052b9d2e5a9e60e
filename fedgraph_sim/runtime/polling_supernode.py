"""Flower's SuperNode, polling its SuperLink for messages more often than every 3 seconds.

Flower 1.41's SuperNode (``supernode/start_client_internal.py``) pulls a message from the
SuperLink, hands it to its ClientApp, waits for the reply in steps of 0.5 s, pushes it, and
sleeps 3 s whenever a pull found nothing. A round's message therefore waits on average 1.5 s (at
most 3 s) before the node even sees it, and its reply up to 0.5 s more: a floor of seconds per
round that no ClientApp start-up saving can lower. Neither interval is configurable in 1.41.

This runs Flower's own ``flower-supernode`` command unchanged, except that every sleep of that
module is capped at ``POLL_SECONDS``: the node asks for messages (and checks for its reply) at that
pace. Nothing else differs: the same arguments, the same state, the same gRPC calls, only more of
the idle ones.

    python -m fedgraph_sim.runtime.polling_supernode [flower-supernode's arguments]

``fedgraph-sim deploy`` starts its SuperNodes this way unless ``--clientapps flower`` asks for
Flower's own processes throughout (``deployment.py``).
"""

from __future__ import annotations

import importlib
import sys
import time

#: Seconds between a node's pulls while idle (Flower's: 3) and between its checks for a reply
#: (Flower's: 0.5). An idle pull is one small gRPC call; ten nodes at this pace cost the SuperLink
#: well under a core.
POLL_SECONDS = 0.1


class CappedClock:
    """``time`` as the SuperNode's loop sees it: every other name as in :mod:`time`, ``sleep``
    capped at ``cap`` seconds."""

    def __init__(self, cap: float) -> None:
        self.cap = cap

    def sleep(self, seconds: float) -> None:
        time.sleep(min(seconds, self.cap))

    def __getattr__(self, name: str):
        return getattr(time, name)


def main(argv: list[str] | None = None) -> None:
    # the module, not the function of the same name its package exports
    loop = importlib.import_module("flwr.supernode.start_client_internal")
    loop.time = CappedClock(POLL_SECONDS)
    from flwr.supernode.cli import flower_supernode

    sys.argv = ["flower-supernode", *(sys.argv[1:] if argv is None else argv)]
    flower_supernode()


if __name__ == "__main__":
    main()
