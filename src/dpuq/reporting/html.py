"""One self-contained HTML page (figures embedded as base64 PNG, no script, no network).

The page is written for a reader who is not a statistician (a clinician). Results come first:
what a prediction set means, how often it contains the truth, how large it is, example sets and
the figures. Privacy comes second, in plain words (what ε bounds), with the full statement
folded away; then what the guarantee does not say, a glossary, and the technical details.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Example", "ReportPage", "figure_png", "image_png", "render_page", "thumbnail_png"]


def figure_png(fig, dpi: int = 110) -> bytes:
    """PNG bytes of a matplotlib figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def image_png(pixels: np.ndarray, scale: int = 8) -> bytes:
    """PNG bytes of a small grey-scale image, enlarged ``scale`` times with crisp pixels.

    Examples
    --------
    >>> image_png(np.eye(4))[:4]
    b'\\x89PNG'
    """
    from matplotlib.image import imsave

    big = np.kron(np.asarray(pixels, dtype=float), np.ones((scale, scale)))
    buf = io.BytesIO()
    imsave(buf, big, cmap="gray_r", format="png")
    return buf.getvalue()


def thumbnail_png(pixels: np.ndarray, width: int = 64) -> bytes:
    """PNG bytes of a square grey-scale image (flat or 2-d), enlarged to about ``width``
    pixels (at least twice).

    Examples
    --------
    >>> thumbnail_png(np.zeros(64))[:4]
    b'\\x89PNG'
    """
    pixels = np.asarray(pixels)
    side = round(float(np.sqrt(pixels.size)))
    return image_png(pixels.reshape(side, side), scale=max(2, width // side))


def _img(png: bytes, alt: str, width: int | None = None) -> str:
    data = base64.b64encode(png).decode("ascii")
    size = f' width="{width}"' if width else ""
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"{size}>'


@dataclass(frozen=True)
class Example:
    """One test image with its true label and the sets that several pipelines gave it."""

    png: bytes
    truth: str
    sets: Sequence[tuple[str, Sequence[str]]]  # (pipeline, labels in the set, most likely first)


@dataclass
class ReportPage:
    """Content of the page; every string is plain text (escaped when rendered)."""

    title: str
    intro: Sequence[str]
    privacy: Sequence[str]
    table_header: Sequence[str]
    table_rows: Sequence[Sequence[str]]
    figures: Sequence[tuple[str, bytes, str]] = field(default_factory=list)  # title, png, caption
    examples: Sequence[Example] = field(default_factory=list)
    examples_intro: str = ""
    caveats: Sequence[str] = field(default_factory=list)
    details: Sequence[tuple[str, str]] = field(default_factory=list)  # heading, preformatted
    summary: Sequence[str] = field(default_factory=list)  # the results in sentences
    table_notes: Sequence[tuple[str, str]] = field(default_factory=list)  # column, meaning
    privacy_intro: Sequence[str] = field(default_factory=list)  # privacy in plain words
    glossary: Sequence[tuple[str, str]] = field(default_factory=list)  # term, definition
    #: (title, header, rows, caption) tables shown after the figures (e.g. conditional coverage)
    tables: Sequence[tuple[str, Sequence[str], Sequence[Sequence[str]], str]] = field(
        default_factory=list
    )


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1080px;
margin:2em auto;padding:0 1em;color:#1b1b1b;line-height:1.5}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f3f5f8}figure{margin:1.5em 0}figcaption{color:#444;font-size:.92em}
img{max-width:100%}.box{background:#f6f8fb;border-left:4px solid #0072B2;padding:.6em 1em}
.chip{display:inline-block;border:1px solid #888;border-radius:1em;padding:0 .55em;margin:.1em;
font-size:.9em}.miss{color:#b00020;font-weight:600}.examples td{text-align:center}
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em;white-space:pre-wrap}
.lead li{margin:.3em 0}.notes{font-size:.88em;color:#333}.notes dt{font-weight:600}
.notes dd{margin:0 0 .3em 1.2em}dl.glossary dt{font-weight:600;margin-top:.5em}
dl.glossary dd{margin-left:1.2em}summary{cursor:pointer;color:#0b5394}
"""


def _p(text: str) -> str:
    return f"<p>{html.escape(text)}</p>"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    e = html.escape
    return [
        "<table><thead><tr>",
        *(f"<th>{e(h)}</th>" for h in header),
        "</tr></thead><tbody>",
        *("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows),
        "</tbody></table>",
    ]


def _examples(page: ReportPage) -> list[str]:
    e = html.escape
    pipelines = [name for name, _ in page.examples[0].sets]
    parts = [
        "<h2>Example sets</h2>",
        _p(page.examples_intro),
        '<table class="examples"><thead><tr><th>image</th><th>true label</th>',
        *(f"<th>{e(name)}</th>" for name in pipelines),
        "</tr></thead><tbody>",
    ]
    for ex in page.examples:
        cells = []
        for _, labels in ex.sets:
            chips = "".join(f'<span class="chip">{e(str(x))}</span>' for x in labels)
            if ex.truth not in labels:
                chips += '<br><span class="miss">misses the true label</span>'
            cells.append(f"<td>{chips or '<em>empty set</em>'}</td>")
        parts.append(
            f"<tr><td>{_img(ex.png, 'example image', 64)}</td><td>{e(ex.truth)}</td>"
            + "".join(cells)
            + "</tr>"
        )
    parts.append("</tbody></table>")
    return parts


def _definitions(pairs: Sequence[tuple[str, str]], css: str) -> list[str]:
    e = html.escape
    return [
        f'<dl class="{css}">',
        *(f"<dt>{e(term)}</dt><dd>{e(text)}</dd>" for term, text in pairs),
        "</dl>",
    ]


def render_page(page: ReportPage) -> str:
    """The whole HTML document as a string: results first, then privacy, caveats, glossary."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(page.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(page.title)}</h1>",
        '<div class="box">' + "".join(_p(t) for t in page.intro) + "</div>",
        "<h2>Results</h2>",
    ]
    if page.summary:
        parts += ['<ul class="lead">', *(f"<li>{e(t)}</li>" for t in page.summary), "</ul>"]
    parts += _table(page.table_header, page.table_rows)
    if page.table_notes:
        parts += [
            "<details><summary>What the columns mean</summary>",
            *_definitions(page.table_notes, "notes"),
            "</details>",
        ]
    if page.examples:
        parts += _examples(page)
    if page.figures:
        parts.append("<h2>How coverage and set size vary</h2>")
    for title, png, caption in page.figures:
        parts += [
            f"<figure><h3>{e(title)}</h3>",
            _img(png, title),
            f"<figcaption>{e(caption)}</figcaption></figure>",
        ]
    for title, header, rows, caption in page.tables:
        parts += [f"<h3>{e(title)}</h3>", *_table(header, rows), _p(caption)]
    parts.append("<h2>Privacy, in plain words</h2>")
    if page.privacy_intro:
        parts += [_p(t) for t in page.privacy_intro]
        if page.privacy:
            parts += [
                "<details><summary>The privacy guarantee in full</summary>",
                *(_p(t) for t in page.privacy),
                "</details>",
            ]
    else:
        parts += [_p(t) for t in page.privacy]
    if page.caveats:
        parts += ["<h2>What the guarantee does not say</h2>", "<ul>"]
        parts += [f"<li>{e(c)}</li>" for c in page.caveats]
        parts.append("</ul>")
    if page.glossary:
        parts += ["<h2>Glossary</h2>", *_definitions(page.glossary, "glossary")]
    if page.details:
        parts.append("<h2>Technical details</h2>")
        for heading, text in page.details:
            parts.append(f"<details><summary>{e(heading)}</summary><pre>{e(text)}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)
