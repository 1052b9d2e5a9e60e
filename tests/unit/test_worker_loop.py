"""A worker's side of the socket: what it sends back for each call, and when it stops."""

import dataclasses
import pickle
import socket
import subprocess
import sys
from multiprocessing import connection
from pathlib import Path

import pytest

from attacks.base import Attack
from server.attack_calls import Call
from server.worker_loop import ENTRY, attack_specs

pytestmark = pytest.mark.slow  # starts a worker interpreter
ROOT = Path(__file__).resolve().parents[2]


class Knowledge:
    def hints_read(self):
        return frozenset()

    def forget_reads(self):
        pass


class Chatty(Attack):
    """Reports progress, streams a graph, then returns what ``pickles`` says can be sent back."""

    name, paper = "chatty", "test double"

    @dataclasses.dataclass
    class Params:
        pickles: bool = True

    def not_applicable(self, update, knowledge):
        return None

    def reconstruct(self, update, knowledge, ctx):
        ctx.progress(1, 2)
        ctx.checkpoint(["streamed"])
        return ["graph"] if self.params.pickles else [lambda: None]


def test_a_worker_reports_each_call_and_a_result_it_cannot_send_is_invalid_output():
    module, _, function = ENTRY.partition(":")
    parent, child = socket.socketpair()
    program = f"import sys; from {module} import {function}; {function}(int(sys.argv[1]))"
    worker = subprocess.Popen([sys.executable, "-c", program, str(child.fileno())], pass_fds=(child.fileno(),),
                              cwd=ROOT)
    child.close()
    conn = connection.Connection(parent.detach())

    def call(name):
        conn.send_bytes(pickle.dumps(Call(0, "reconstruct", name, None, Knowledge(), 1, 60.0)))
        messages = [pickle.loads(conn.recv_bytes())]
        while messages[-1][0] != "done":
            messages.append(pickle.loads(conn.recv_bytes()))
        return messages

    try:
        conn.send_bytes(pickle.dumps((attack_specs({"chatty": Chatty(), "chatty@lambda": Chatty(pickles=False)}), [])))
        started, progress, checkpoint, (done, result) = call("chatty")
        assert (started, progress, checkpoint, done) == (("started",), ("progress", 1, 2), ("checkpoint", ["streamed"]),
                                                          "done")
        assert (result.status, result.output) == ("ok", ["graph"])
        *_, (_, result) = call("chatty@lambda")
        assert result.status == "invalid_output" and result.output is None
        assert result.message.startswith("could not be sent back: ")
        conn.send_bytes(pickle.dumps(None))
        assert worker.wait(timeout=60) == 0
    finally:
        worker.kill()
        worker.wait()
