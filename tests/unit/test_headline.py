"""The run's plain-words answer: the verdict in three outcomes, then exact reconstructions per
attack, priors left out."""

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
    assert text.startswith("Verdict: leaks. The server reconstructed 1 of 3 attacked graphs exactly")
    assert "by grain: grain 1 of 3, inverting_gradients 0 of 1" in text


def test_a_run_without_exact_graphs_says_no_leak_found_or_not_measured():
    text = headline([_row("dlg", False), _row("dlg", False, status="crashed")])
    assert text.startswith("Verdict: no leak found. No attack reconstructed a graph exactly: 0 of 1 graphs whose")
    assert "failed 1, timed out 0" in text and "not proof that nothing leaks" in text
    assert headline([]) == "Verdict: not measured (no attack applies)."
    assert headline([_row("dlg", False, status="crashed")]).startswith(
        "Verdict: not measured (every call failed, crashed or timed out before it was scored)")
