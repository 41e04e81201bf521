#!/usr/bin/env python3
"""Checks the book in DOCS_DIR (default: docs), once `mdbook build` built it.

The sources (DOCS_DIR/src): every Rust code block is made of `{{#include}}`
lines only, so the book shows no Rust that the compiler has not checked, and
every include names a file that exists and, for `file:anchor`, an anchor
that marks some lines (mdBook itself includes nothing for an unknown anchor
and goes on).

The built HTML (DOCS_DIR/book): every relative link (href and src) of every
page names a file of the book, and every #fragment an id of the page it
points to. External links (http, https, mailto) are listed, never fetched:
tests run without a network.

Exits 1 with what is wrong, one line each.

Usage: scripts/check-book.py [DOCS_DIR]
"""

import html
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    """The links and the ids of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self.ids = set()
        self.base = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name"):
            if attrs.get(name) and (name == "id" or tag == "a"):
                self.ids.add(attrs[name])
        if tag == "base" and attrs.get("href"):
            self.base = attrs["href"]
        for name in ("href", "src"):
            value = attrs.get(name)
            if value is not None and tag != "base":
                self.links.append((tag, value))


def parse(path, cache):
    if path not in cache:
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        cache[path] = page
    return cache[path]


# mdBook leaves an include written `\{{#include ...}}` as text.
INCLUDE = re.compile(r"(?<!\\)\{\{#(?:include|rustdoc_include) ([^}:]+)(?::([^}]*))?\}\}")


def check_sources(src):
    """What is wrong in the Markdown of `src`: Rust blocks not made of
    includes, includes of missing files or anchors."""
    wrong = []
    for page in sorted(src.rglob("*.md")):
        name = page.relative_to(src)
        fence = None
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            stripped = line.strip()
            if fence is None:
                if stripped.startswith("```"):
                    # The language: "rust" of "rust,ignore" or "rust noplayground".
                    fence = re.split(r"[ ,{]", stripped[3:].strip())[0]
                    continue
            elif stripped.startswith("```"):
                fence = None
                continue
            elif fence == "rust" and stripped and not INCLUDE.fullmatch(stripped):
                wrong.append(f"{name}:{number}: Rust that is not included from a compiled file")
            for match in INCLUDE.finditer(line):
                path, anchor = match.group(1), match.group(2)
                target = (page.parent / path).resolve()
                if not target.is_file():
                    wrong.append(f"{name}:{number}: {path}: no such file")
                    continue
                if anchor is None or anchor.split(":")[0].isdigit() or anchor == "":
                    continue
                lines = target.read_text(encoding="utf-8").splitlines()
                starts = [i for i, l in enumerate(lines) if l.strip() == f"// ANCHOR: {anchor}"]
                ends = [i for i, l in enumerate(lines) if l.strip() == f"// ANCHOR_END: {anchor}"]
                if len(starts) != 1 or len(ends) != 1 or ends[0] <= starts[0] + 1:
                    wrong.append(
                        f"{name}:{number}: {path}: anchor {anchor!r} missing, repeated or empty"
                    )
    return wrong


def main():
    docs = Path(sys.argv[1] if len(sys.argv) > 1 else "docs").resolve()
    wrong = check_sources(docs / "src")
    if wrong:
        print(f"book sources: {len(wrong)} problems", file=sys.stderr)
        for line in wrong:
            print(f"  {line}", file=sys.stderr)
        sys.exit(1)
    book = docs / "book"
    if not (book / "index.html").is_file():
        sys.exit(f"{book}: no built book (run `mdbook build {docs}` first)")
    cache = {}
    broken = []
    external = set()
    pages = sorted(book.rglob("*.html"))
    for path in pages:
        page = parse(path, cache)
        if page.base is not None:
            # 404.html: its links are relative to the site's root URL, which
            # only the web server knows.
            continue
        for tag, link in page.links:
            link = html.unescape(link.strip())
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "mailto"):
                external.add(link)
                continue
            if parts.scheme or link.startswith("//"):
                broken.append(f"{path.relative_to(book)}: {link}: unexpected scheme")
                continue
            target = path
            if parts.path:
                target = (path.parent / unquote(parts.path)).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if book not in target.parents and target != book:
                    broken.append(f"{path.relative_to(book)}: {link}: outside the book")
                    continue
                if not target.is_file():
                    broken.append(f"{path.relative_to(book)}: {link}: no such file")
                    continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                if fragment not in parse(target, cache).ids:
                    broken.append(
                        f"{path.relative_to(book)}: {link}: no id {fragment!r} in "
                        f"{target.relative_to(book)}"
                    )
    print(f"book links: {len(pages)} pages checked")
    if external:
        print(f"external links (not fetched): {len(external)}")
        for link in sorted(external):
            print(f"  {link}")
    if broken:
        print(f"broken links: {len(broken)}", file=sys.stderr)
        for line in broken:
            print(f"  {line}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
