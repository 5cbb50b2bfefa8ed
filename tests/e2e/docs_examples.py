"""The example blocks of the manual (README.md and docs/**/*.md), for test_docs.py and
test_docs_examples.py.

A whole config file is a fenced block opened with ```json config, a whole servers file (what
--servers-file reads: a Claude Desktop or VS Code file) one opened with ```json servers; plain
```json blocks are fragments, or files of other programs (a host's own config). GitHub shows the
first word of the info string; MkDocs needs docs/hooks/example_blocks.py for the rest."""

import re
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
KINDS = ("config", "servers")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self):
        """"config" or "servers" for a marked example, else None."""
        words = self.info.split()
        return words[1] if len(words) == 2 and words[0] == "json" and words[1] in KINDS else None


def manual_files() -> list:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def fenced_blocks(path: Path) -> list:
    """Every fenced code block of a Markdown file, with the line it opens on."""
    blocks = []
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        end = i + 1
        while end < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[end]):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{path.relative_to(ROOT)}:{i + 1}: a fenced block that never closes")
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines[i + 1:end])
        blocks.append(Block(path, i + 1, m.group("info").strip(), body + "\n"))
        i = end + 1
    return blocks


def example_blocks() -> list:
    """The marked examples (```json config, ```json servers) of README.md and docs/."""
    return [b for f in manual_files() for b in fenced_blocks(f) if b.kind]


def all_blocks() -> list:
    return [b for f in manual_files() for b in fenced_blocks(f)]
