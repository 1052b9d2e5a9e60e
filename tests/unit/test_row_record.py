"""The result row: the evaluator's typed record, the flat form every reader gets back, and the
names of the derived columns, kept in one place."""

import json
import typing

from fedgraph_sim.rows.record import (SPREAD_FIELDS, ResultRow, Row, federation_id, gain_column, group_key,
                                      prior_column)


def _row(**changes) -> ResultRow:
    fields = dict(run="r", dataset="d", seed=0, round=1, client=0, observed="client", aggregated_clients=1,
                  dropped_clients=0, batch_index=0,
                  graph_id=3, num_nodes=4, attack="a", defense="none", defense_stack=[], status="ok",
                  message="", seconds=0.5, update_kind="gradient", exact_gradient=True, batch_size=1,
                  local_steps=1, attack_input="gradient",
                  aux="same:holdout", hint_node_count=True, hint_label=False, hint_adjacency=False,
                  hint_features=False, hint_per_node_gradients=False, hint_node_labels=False, read_node_count=True,
                  read_label=False, read_adjacency=False, read_features=False, read_node_labels=False,
                  node_order="original", label_true=1, defense_report={"epsilon": 2.0}, extra={"cell": "c"},
                  label_guess=1, scores={"identity_adj_auc": 0.75, gain_column("identity_adj_auc"): 0.25},
                  priors={"identity_adj_auc": 0.5}, info={"rank": 2})
    return ResultRow(**{**fields, **changes})


def test_a_result_row_flattens_to_the_jsonl_columns():
    flat = _row().as_dict()
    assert flat["defense_epsilon"] == 2.0 and flat["cell"] == "c" and flat["info_rank"] == 2
    assert flat["label_correct"] == 1 and flat["identity_adj_auc"] == 0.75
    assert flat[prior_column("identity_adj_auc")] == 0.5 and flat["gain_identity_adj_auc"] == 0.25
    json.dumps(flat)


def test_the_stored_form_types_every_column_of_the_record_alike():
    """``Row`` declares each of ResultRow's own columns with its field's type: a reader and the
    evaluator never disagree on a name or a type."""
    record, stored = typing.get_type_hints(ResultRow), typing.get_type_hints(Row)
    own = {name: kind for name, kind in record.items() if name not in SPREAD_FIELDS}
    assert {name: stored.get(name) for name in own} == own
    flat = _row().as_dict()
    derived = ("prior_", "gain_", "defense_", "info_", "identity_")
    assert [k for k in flat if k not in stored and not k.startswith(derived)] == []


def test_a_rows_group_and_federation_have_one_default_each():
    assert group_key({"attack": "grain"}) == ("", "grain", "", "none")
    assert group_key({"attack": "grain", "dataset": "MUTAG", "setting": None, "defense": "prune(p=0.9)"}) == \
        ("MUTAG", "grain", "", "prune(p=0.9)")
    assert federation_id({"cell": "mutag-s0__grain-1a2b"}) == "mutag-s0"
    assert federation_id({"cell": "a__b__grain-1a2b"}) == "a__b"  # the attack part is the last one
    assert federation_id({"run": "r"}) is None
