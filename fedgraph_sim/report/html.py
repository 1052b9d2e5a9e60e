"""One self-contained HTML page: text, tables and figures inline (PNG as ``data:`` URIs), no
script, font or style sheet fetched from anywhere, so the page opens offline and can be mailed.

    page = Page("Audit of mutag_grain")
    page.heading("Verdict"); page.paragraph("...", css="verdict")
    page.table(["attack", "gain"], [["grain", "0.41"]])
    page.figure(matplotlib_figure, "Exact reconstructions by round")
    Path("audit.html").write_text(page.render())

``markdown_page`` turns the markdown our reports write (``report.md``: headings, pipe tables,
images with an italic caption line after them, lists, paragraphs) into such a page.
"""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
.verdict { font-size: 1.1rem; background: #fff4e5; border-left: 4px solid #e67e22; padding: .6rem 1rem; }
table { border-collapse: collapse; margin: .5rem 0; } td, th { border: 1px solid #ddd; padding: .25rem .5rem; }
th { background: #f4f4f4; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } figure img { max-width: 100%; } figcaption { color: #555; font-size: .9rem; }
.note { color: #555; font-size: .9rem; }
"""


def png_data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def figure_png(fig) -> bytes:
    """A matplotlib figure as PNG bytes (the figure is closed)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


class Page:
    """An HTML page built top to bottom; every text is escaped."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = [f"<h1>{html.escape(title)}</h1>"]

    def heading(self, text: str, anchor: str | None = None, level: int = 2) -> None:
        ident = f' id="{html.escape(anchor)}"' if anchor else ""
        self.parts.append(f"<h{level}{ident}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str, css: str | None = None) -> None:
        cls = f' class="{html.escape(css)}"' if css else ""
        self.parts.append(f"<p{cls}>{html.escape(text)}</p>")

    def items(self, texts: list[str], css: str | None = None) -> None:
        cls = f' class="{html.escape(css)}"' if css else ""
        self.parts.append(f"<ul{cls}>" + "".join(f"<li>{html.escape(t)}</li>" for t in texts) + "</ul>")

    def table(self, columns: list[str], rows: list[list]) -> None:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "".join("<tr>" + "".join(self._cell(v) for v in row) + "</tr>" for row in rows)
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    @staticmethod
    def _cell(value) -> str:
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        return f'<td class="num">{value}</td>' if numeric else f"<td>{html.escape(str(value))}</td>"

    def figure(self, image, caption: str, alt: str | None = None) -> None:
        """``image``: a matplotlib figure, PNG bytes or a PNG file's path."""
        if isinstance(image, (str, Path)):
            png = Path(image).read_bytes()
        elif isinstance(image, bytes):
            png = image
        else:
            png = figure_png(image)
        self.parts.append(f'<figure><img src="{png_data_uri(png)}" alt="{html.escape(alt or caption)}">'
                          f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def render(self) -> str:
        body = "\n".join(self.parts)
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head>\n"
                f"<body>\n{body}\n</body></html>\n")


def _plain(text: str) -> str:
    """Markdown's inline marks dropped: `code`, *emphasis*, **strong** and escaped pipes."""
    return re.sub(r"\*\*?([^*]+)\*\*?", r"\1", text.replace("`", "").replace("\\|", "|")).strip()


def _table_cells(line: str) -> list[str]:
    return [_plain(c) for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def markdown_page(text: str, directory: Path) -> Page:
    """The page of a markdown report whose images are files relative to ``directory``."""
    lines = text.splitlines()
    title = next((line[2:] for line in lines if line.startswith("# ")), directory.name)
    page, i = Page(_plain(title)), 0
    while i < len(lines):
        line = lines[i]
        image = re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line.strip())
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            if level > 1:
                page.heading(_plain(line.lstrip("#")), level=min(level, 4))
        elif image:
            caption = ""
            if i + 2 < len(lines) and not lines[i + 1].strip() and lines[i + 2].startswith("*"):
                caption, i = _plain(lines[i + 2]), i + 2
            page.figure(directory / image.group(2), caption or image.group(1))
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i].strip()):
                    rows.append(_table_cells(lines[i]))
                i += 1
            page.table(rows[0], rows[1:])
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(_plain(lines[i][2:]))
                i += 1
            page.items(items)
            continue
        elif line.strip():
            page.paragraph(_plain(line))
        i += 1
    return page
