"""The report page as parsed HTML: the elements and texts that test_html.py and test_openb_sim.py check."""

from __future__ import annotations

from html.parser import HTMLParser


class Parsed(HTMLParser):
    """Every element with its attributes and the text directly inside it, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: dict[int, list[str]] = {}
        self._open: list[int] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in ("meta", "link", "input", "br", "rect", "img"):
            self._open.append(len(self.elements) - 1)

    def handle_endtag(self, tag: str) -> None:
        if self._open and self.elements[self._open[-1]][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open:
            self.texts.setdefault(self._open[-1], []).append(data)

    def all(self, tag: str, cls: str = "") -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and (not cls or cls in a.get("class", "").split())]

    def text_of(self, tag: str, cls: str) -> list[str]:
        return [
            "".join(self.texts.get(i, []))
            for i, (t, a) in enumerate(self.elements)
            if t == tag and cls in a.get("class", "").split()
        ]
