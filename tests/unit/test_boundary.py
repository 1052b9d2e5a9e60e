"""server.boundary: what attack.boundary asks for, refused in one line when it cannot be had."""

from pathlib import Path

import pytest

from fedgraph_sim.config import load_config
from fedgraph_sim.errors import ConfigError
from server import sandbox
from server.boundary import boundary_for

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, *overrides):
    return load_config(None, ["data.dataset=synthetic", f"output.dir={tmp_path}", *overrides])


@pytest.mark.skipif(bool(sandbox.namespaces_available()), reason="no namespaces here")
def test_the_default_hides_the_output_base_and_the_cache(tmp_path):
    boundary = boundary_for(_config(tmp_path))
    assert boundary.isolate and str(tmp_path) in boundary.hidden
    assert set(boundary.modules) >= {"attacks", "clients", "server", "fedgraph_sim"}  # the project's packages
    assert str(tmp_path / "run") in boundary.hiding(tmp_path / "run", None).hidden


def test_an_output_base_that_is_a_package_is_refused_unless_nothing_is_isolated(tmp_path):
    if sandbox.namespaces_available():
        pytest.skip("no namespaces here")
    package = ROOT / "attacks"
    with pytest.raises(ConfigError, match=f"attack.boundary: {package} is hidden from the attack workers"):
        boundary_for(_config(tmp_path, f"output.dir={package}"))
    assert not boundary_for(_config(tmp_path, f"output.dir={package}", "attack.boundary=process")).isolate
    assert not boundary_for(_config(tmp_path, f"output.dir={package}", "attack.workers=0")).isolate
    # the checkout's root holds code, but is no package: runs written there are simply not in the view
    assert boundary_for(_config(tmp_path, f"output.dir={ROOT}")).isolate


def test_namespaces_asked_where_they_cannot_be_had_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "namespaces_available", lambda: "needs Linux with util-linux's unshare")
    with pytest.raises(ConfigError, match="attack.boundary: namespaces cannot be had here"):
        boundary_for(_config(tmp_path, "attack.boundary=namespaces"))
    assert not boundary_for(_config(tmp_path)).isolate  # auto: plain processes, with a warning
