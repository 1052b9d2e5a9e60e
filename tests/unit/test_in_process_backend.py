"""The in-process Simulation Engine backend: the ClientApp called in this process as Flower's Ray
actor calls it, an app's exception reported as the actor reports it, selected by the backend
config; the federation it runs gives the rows of the Ray backend (tests/integration)."""

import time

import pytest
from flwr.app import Context, Message, Metadata, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.clientapp.client_app import ClientAppException

from fedgraph_sim.runtime import ray_backend
from fedgraph_sim.runtime.in_process_backend import IN_PROCESS, InProcessBackend, engine_of


def _context() -> Context:
    from flwr.app import RecordDict as State

    return Context(run_id=1, node_id=7, node_config={"partition-id": 3}, state=State(), run_config={})


def _message() -> Message:
    # as the SuperLink hands it on: the metadata set (an instruction built here would need a run)
    metadata = Metadata(run_id=1, message_id="m1", src_node_id=1, dst_node_id=7, reply_to_message_id="", group_id="",
                        created_at=time.time(), ttl=3600.0, message_type="train")
    return Message(RecordDict({"metrics": MetricRecord({"x": 1})}), metadata=metadata)


def _app(fail: bool) -> ClientApp:
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        if fail:
            raise RuntimeError("the client broke")
        context.state["seen"] = MetricRecord({"partition": int(context.node_config["partition-id"])})
        return Message(RecordDict({"metrics": MetricRecord({"y": 2})}), reply_to=msg)

    return app


def test_the_engine_is_named_by_the_backend_config_and_ray_is_the_default():
    assert engine_of(None) == engine_of({"client_resources": {"num_cpus": 1}}) == "ray"
    assert engine_of({"fedgraph": {"engine": IN_PROCESS}}) == IN_PROCESS


def test_a_message_runs_the_app_here_and_the_context_it_changed_comes_back():
    backend = InProcessBackend({})
    backend.build(lambda: _app(fail=False))
    assert backend.num_workers == 1 and backend.is_worker_idle()
    sent, stored = _message(), _context()
    reply, context = backend.process_message(sent, stored)
    assert reply.content["metrics"]["y"] == 2 and reply.metadata.dst_node_id == 1  # the reply goes back
    assert context.state["seen"]["partition"] == 3  # the engine stores it: a node's state persists
    assert "seen" not in stored.state and "y" not in sent.content["metrics"]  # the app had copies, as an actor


def test_an_app_that_raises_is_reported_as_flowers_actor_reports_it():
    backend = InProcessBackend({})
    backend.build(lambda: _app(fail=True))
    with pytest.raises(ClientAppException, match="the client broke"):
        backend.process_message(_message(), _context())
    with pytest.raises(ValueError, match="build"):
        InProcessBackend({}).process_message(_message(), _context())


def test_the_engine_builds_the_backend_the_config_names_without_starting_ray():
    import ray
    from flwr.server.superlink.fleet.vce.backend import raybackend

    ray_backend.install()
    up = ray.is_initialized()  # another test's session Ray may be up: this one starts none
    built = raybackend.RayBackend({"fedgraph": {"engine": IN_PROCESS}})  # what Flower 1.41's engine calls
    assert isinstance(built, InProcessBackend) and ray.is_initialized() == up
