# SPDX-License-Identifier: GPL-2.0-only
"""Htmlpage: the report's Markdown as one HTML page (the subset of
Markdown report.md uses)."""

import html
import re

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")


def _inline(text):
    """A line of Markdown text as HTML: `code` and **bold**, the rest
    escaped."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def markdown_to_html(md):
    """The report's Markdown as HTML: headings, paragraphs, bullet lists,
    tables and images in the order they come (the subset report.md uses)."""
    out, block = [], None

    def close():
        nonlocal block
        if block:
            out.append(f"</{block}>")
        block = None

    def open_(tag):
        nonlocal block
        if block != tag:
            close()
            out.append(f"<{tag}>")
            block = tag

    first_row = False
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            cells = [c.replace("\\|", "|") for c in cells]
            if all(c and set(c) <= {"-", ":"} for c in cells):
                continue
            if block != "table":
                open_("table")
                first_row = True
            tag = "th" if first_row else "td"
            first_row = False
            out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells)
                       + "</tr>")
            continue
        image = _IMAGE.match(line.strip())
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        if image:
            close()
            out.append(f'<p><img src="{html.escape(image.group(2))}" '
                       f'alt="{html.escape(image.group(1))}" style="max-width:100%"></p>')
        elif heading:
            close()
            level = min(len(heading.group(1)), 3)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("- "):
            open_("ul")
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            close()
            out.append(f"<p>{_inline(line)}</p>")
        else:
            close()
    close()
    return "\n".join(out)
