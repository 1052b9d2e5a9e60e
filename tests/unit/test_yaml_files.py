"""The one reader of user-named YAML files: each way a file can be wrong is one ConfigError line
naming the option, never a traceback from the decoder or the parser."""

import pytest

from fedgraph_sim.errors import ConfigError
from fedgraph_sim.yaml_files import MAX_BYTES, read_yaml


def test_reads_a_mapping_and_an_empty_file(tmp_path):
    (tmp_path / "a.yaml").write_text("federation: {rounds: 2}\n")
    (tmp_path / "empty.yaml").write_text("")
    assert read_yaml(tmp_path / "a.yaml") == {"federation": {"rounds": 2}}
    assert read_yaml(tmp_path / "empty.yaml") is None


@pytest.mark.parametrize("make, expected", [
    (lambda d: d / "missing.yaml", "no such file"),
    (lambda d: d, "is a directory"),
    (lambda d: (d / "b.bin").write_bytes(b"\x7fELF\xd0\xff") and d / "b.bin", "not a text file"),
    (lambda d: (d / "big.yaml").write_text("a: " + "x" * MAX_BYTES) and d / "big.yaml", "bytes; a config is"),
    (lambda d: (d / "bad.yaml").write_text("a: [1\n") and d / "bad.yaml", "not valid YAML"),
    (lambda d: (d / "loop").symlink_to(d / "loop") or d / "loop", "cannot read"),
])
def test_each_fault_is_one_line_naming_the_option(tmp_path, make, expected):
    path = make(tmp_path)
    with pytest.raises(ConfigError) as caught:
        read_yaml(path, key="--config")
    message = str(caught.value)
    assert message.startswith("--config: ") and expected in message and "\n" not in message
