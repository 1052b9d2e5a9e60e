"""The run's plain-words answer: exact reconstructions per attack, priors left out."""

from fedgraph_sim.report.headline import exact_counts, headline


def _row(attack, exact, status="ok", graph_id=0):
    row = {"attack": attack, "status": status, "graph_id": graph_id}
    if status == "ok":
        row["gsm_full_iso"] = 1.0 if exact else 0.0
    return row


def test_exact_reconstructions_are_counted_over_every_attacked_graph():
    rows = [_row("grain", True), _row("grain", False), _row("grain", False, status="failed"),
            _row("inverting_gradients", False), _row("aux_sample", True),  # a prior: not an attack
            _row("dlg", False, status="not_applicable")]
    assert exact_counts(rows) == {"grain": (1, 3), "inverting_gradients": (0, 1)}
    text = headline(rows)
    assert text.startswith("The server reconstructed 1 of the 3 attacked graphs exactly")
    assert "grain 1 of 3, inverting_gradients 0 of 1" in text


def test_a_run_without_exact_graphs_says_so():
    assert headline([_row("dlg", False)]).startswith("No attacked graph was reconstructed exactly")
    assert headline([]).startswith("No attack was run")
