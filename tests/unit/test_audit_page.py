"""The audit page from an audit's facts: the verdict first, the evidence, the attacks that did not
apply, the drawings, leakage against round and the what-if, in one self-contained file; opened in
headless Chromium (skipped, saying why, where Chromium cannot run): no console error, every image
loaded, the verdict visible. The checker itself is shown to catch a broken image and an error."""

import json
from pathlib import Path

from fedgraph_sim.report.audit_facts import audit_facts
from fedgraph_sim.report.audit_page import render_audit
from fedgraph_sim.report.drawings import drawing_figure
from tests.browser import Browser

PLAN = {"config": {"name": "mine", "dataset": "MUTAG", "clients": 4, "rounds": 3}, "rounds": [1, 2, 3],
        "budget": {"seconds": 5.0, "clients": 2, "graphs": 4, "workers": 1}, "levels": ["update", "hints"],
        "level_text": {"update": "the update alone", "hints": "the update and hints"}, "skipped": {}}
VISIBLE = """[...document.querySelectorAll('.verdict')].map(e => {
  const r = e.getBoundingClientRect(), s = getComputedStyle(e);
  return {text: e.innerText, shown: s.visibility === 'visible' && s.display !== 'none' && r.height > 0
          && r.top >= 0 && r.bottom <= innerHeight}; })"""


def rows():
    out = []
    for rnd in (1, 2, 3):
        for graph, exact in enumerate([1.0, 1.0, 0.0] if rnd == 1 else [0.0, 0.0, 0.0]):
            out.append({"attack": "grain", "status": "ok", "threat_level": "hints", "round": rnd, "setting": "",
                        "graph_id": graph, "gsm_full_iso": exact, "gain_gsm_gsm2": 0.4 * exact,
                        "test_accuracy": 0.8})
        out.append({"attack": "glg", "status": "not_applicable", "threat_level": "update", "round": rnd,
                    "setting": "", "graph_id": 0, "message": "needs the node-count hint (threat.node_count=true)"})
    for setting, exact in (("as configured", 1.0), ("prune_0.9", 0.0)):
        out.append({"attack": "grain", "status": "ok", "threat_level": "hints", "round": 1, "setting": setting,
                    "graph_id": 0, "gsm_full_iso": exact, "seed": 0})
    return out


FEDERATIONS = [{"setting": "as configured", "seed": s, "accuracy": 0.8} for s in (0, 1, 2)] + \
              [{"setting": "prune_0.9", "seed": s, "accuracy": 0.7 + 0.01 * s} for s in (0, 1, 2)]


def drawing(tmp_path: Path) -> tuple[Path, str]:
    d = {"attack": "grain", "defense": "none", "round": 1, "client": 0, "graph_id": 0, "type_block": "node_label",
         "type_values": ["C", "N", "O"], "true_types": [0, 0, 1], "true_edge_index": [[0, 1, 1, 2], [1, 0, 2, 1]],
         "rec_types": [0, 0, 1], "rec_adj": [[0, 1, 0], [1, 0, 1], [0, 1, 0]], "scores": {}, "exact": True}
    saved = drawing_figure("grain", [d], tmp_path / "d.png")
    return saved.path, saved.caption


def page(tmp_path) -> tuple[dict, str]:
    facts = audit_facts(rows(), [{"round": r, "test_accuracy": 0.5 + 0.1 * r} for r in (0, 1, 2, 3)],
                        {**PLAN, "majority_rate": 0.66}, None, FEDERATIONS)
    return facts, render_audit(facts, [drawing(tmp_path)])


def test_the_page_says_the_verdict_first_and_shows_every_section(tmp_path):
    facts, text = page(tmp_path)
    assert text.index('class="verdict') < text.index("Evidence")
    assert "From the update and hints: round 1: leaks: 2 of 3 graphs rebuilt exactly by grain (95% CI" in text
    assert "round 2: undecided at 3: no leak found in 0 of 3 graphs" in text
    assert "From the update alone: not measured in any round: no attack applies" in text
    assert "safe" not in text  # no green verdict: an audit cannot prove the absence of a leak
    assert "glg" in text and "needs the node-count hint (threat.node_count=true)" in text  # why, and the fix
    assert "No tried setting is shown to stop the exact attacks (round 1, 3 seeds): prune_0.9 undecided" in text
    assert "0.80 [0.80, 0.80], 3 seeds" in text and "majority class scores 0.66" in text
    assert "+9.0 points [" in text  # prune's cost over the 3 seeds, with its interval
    assert text.count("data:image/png;base64,") == 2  # the drawing and leakage-by-round
    assert json.loads(json.dumps(facts)) == facts  # audit.json holds the same facts


def test_the_page_opens_in_chromium_without_errors_with_every_image_and_the_verdict_visible(tmp_path):
    _, text = page(tmp_path)
    (tmp_path / "audit.html").write_text(text)
    with Browser() as browser:
        seen = browser.open(tmp_path / "audit.html", VISIBLE)
    (tmp_path / "audit.png").write_bytes(seen.screenshot)
    assert seen.errors == []
    assert len(seen.images) == 2 and all(complete and width > 0 for complete, width, _ in seen.images)
    assert seen.value and all(v["shown"] for v in seen.value)  # on the first screen, without scrolling
    assert any("leaks: 2 of 3 graphs rebuilt exactly" in v["text"] for v in seen.value)
    assert seen.screenshot.startswith(b"\x89PNG") and len(seen.screenshot) > 10_000


def test_the_browser_check_catches_a_broken_image_and_a_console_error(tmp_path):
    (tmp_path / "bad.html").write_text('<!DOCTYPE html><html><body><img src="data:image/png;base64,AAAA" alt="x">'
                                       '<script>console.error("boom")</script></body></html>')
    with Browser() as browser:
        seen = browser.open(tmp_path / "bad.html")
    assert seen.errors == ["boom"]
    assert seen.images == [(True, 0, "x")]


def test_the_exact_drawing_renumbered_onto_the_truth_comes_first_once_per_graph(tmp_path):
    from fedgraph_sim.report.audit_page import _drawings

    def write(cell, name, **fields):
        (tmp_path / cell / "drawings").mkdir(parents=True, exist_ok=True)
        base = {"attack": "grain", "defense": "none", "round": 1, "client": 0, "graph_id": 7, "type_values": ["C"],
                "true_types": [0, 0], "true_edge_index": [[0, 1], [1, 0]], "rec_types": [0, 0],
                "rec_adj": [[0, 1], [1, 0]], "scores": {}, "alignment": "identity", "exact": False}
        (tmp_path / cell / "drawings" / name).write_text(json.dumps({**base, **fields}))

    write("a", "grain_0.json", exact=True)  # the same exact graph in identity order
    write("a", "grain_exact.json", exact=True, alignment="gsm")
    write("b", "grain_exact.json", exact=True, alignment="gsm")  # another level rebuilt it too
    write("b", "grain_1.json", graph_id=8)
    drawn = _drawings([tmp_path / "a", tmp_path / "b"], tmp_path)
    assert len(drawn) == 2  # graph 7 once, graph 8
    assert "renumbered by its isomorphism" in drawn[0][1] and "gsm alignment" in drawn[0][1]


def test_a_dp_claims_check_reads_bound_beside_claim_and_a_refutation_first():
    from fedgraph_sim.report.audit_page import claim_check_text

    check = {"kind": "client", "count": 1000, "delta": 1e-5, "epsilon_claimed": 9.01, "epsilon_lower_bound": 2.21,
             "claim_refuted": False, "guesses": 80, "correct": 79}
    assert claim_check_text(check) == ("2.21 (79 of 80 guesses right, 1000 client canaries; claim 9.01 at delta "
                                       "1e-05)")
    assert claim_check_text({**check, "claim_refuted": True}).startswith("CLAIM REFUTED: 2.21")
    assert claim_check_text({"not_measured": "the wall budget ended first"}) == ("not measured: the wall budget "
                                                                                  "ended first")
    assert claim_check_text(None) == "-"
    nothing = {**check, "epsilon_lower_bound": 0.0, "guesses": 0, "correct": 0}
    assert claim_check_text(nothing).startswith("not measured (the canaries told nothing): 0.00")
