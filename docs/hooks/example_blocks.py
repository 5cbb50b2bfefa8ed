"""MkDocs hook: fenced blocks opened with ```json config or ```json servers (whole config and
servers files, each a test case of tests/e2e/test_docs_examples.py) render as JSON blocks with
the class `example-config` / `example-servers`. Python-Markdown's fenced_code takes one word
after the fence and would leave such a block unrendered; GitHub takes the first word."""

import re

FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*json[ \t]+(config|servers)[ \t]*$", re.MULTILINE)


def on_page_markdown(markdown, **kwargs):
    return FENCE.sub(lambda m: f"{m.group(1)}{{.json .example-{m.group(2)}}}", markdown)
