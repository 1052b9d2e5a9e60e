"""The self-contained page: text escaped, numbers right-aligned, figures inline as PNG data URIs,
nothing fetched from anywhere."""

import base64
import re

from fedgraph_sim.report.artifacts import new_figure
from fedgraph_sim.report.html import Page


def test_text_is_escaped_and_numbers_are_right_aligned():
    page = Page("a <b> & c")
    page.paragraph("<script>alert(1)</script>", css="verdict")
    page.table(["name", "value"], [["x<y", 3], ["z", "4"]])
    text = page.render()
    assert "<script>" not in text and "&lt;script&gt;" in text and "<title>a &lt;b&gt; &amp; c</title>" in text
    assert '<td class="num">3</td>' in text and "<td>4</td>" in text and "<td>x&lt;y</td>" in text


def test_figures_are_inline_pngs_and_nothing_is_fetched():
    page = Page("figures")
    figure = new_figure(2, 2)
    figure.subplots().plot([0, 1], [1, 0])
    page.figure(figure, "a line")
    text = page.render()
    uri, = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert base64.b64decode(uri).startswith(b"\x89PNG")
    assert not re.search(r'(src|href)="(https?:)?//', text)  # no network


def test_a_markdown_report_becomes_the_same_kind_of_page(tmp_path):
    from fedgraph_sim.report.html import markdown_page

    figure = new_figure(2, 2)
    figure.subplots().plot([0, 1], [1, 0])
    figure.savefig(tmp_path / "f.png")
    text = ("# Privacy audit report: s\n\nSweep directory `x`: 3 rows.\n\n- datasets: MUTAG\n- attacks: grain\n\n"
            "## Results\n\n| attack | FULL \\| exact |\n|---|---|\n| grain | 0.72 |\n| *paper* | *0.70* |\n\n"
            "![f](f.png)\n\n*the caption*\n")
    page = markdown_page(text, tmp_path).render()
    assert "<title>Privacy audit report: s</title>" in page and "<h2>Results</h2>" in page
    assert "<th>FULL | exact</th>" in page and "<td>grain</td><td>0.72</td>" in page and "<td>paper</td>" in page
    assert "<li>datasets: MUTAG</li>" in page and "<p>Sweep directory x: 3 rows.</p>" in page
    assert page.count("data:image/png;base64,") == 1 and "<figcaption>the caption</figcaption>" in page
    assert "|---|" not in page and "*" not in page.split("<body>")[1]
