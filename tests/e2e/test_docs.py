"""Issue 44: the manual. docs/ is a MkDocs book (mkdocs.yml at the top); its configuration
reference is generated from config.schema.json by docs/gen_config_reference.py; the README is
the short way in. Here: the reference is what the generator makes of the schema, every field of
the schema says what it is, the book builds with `--strict` and no warning (every link and
anchor resolves, every example block renders), and the README stays short, keeps its two
commands and links only to what exists.

That config.schema.json is what the binary prints (`--print-config-schema`) is the Rust unit
test `shipped_schema_matches_the_code` (src/config/file/mod.rs): the binary prints
`schema_json()`, which that test compares with the file."""

import difflib
import importlib.util
import json
import re
import subprocess
import sys

from conftest import ROOT
from docs_examples import example_blocks, fenced_blocks

GENERATOR = ROOT / "docs" / "gen_config_reference.py"
REFERENCE = ROOT / "docs" / "reference" / "configuration.md"
SCHEMA = ROOT / "config.schema.json"
REGENERATE = "python3 docs/gen_config_reference.py"
README_MAX_LINES = 300


def generator():
    spec = importlib.util.spec_from_file_location("gen_config_reference", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_reference_is_generated_from_the_schema(tmp_path):
    out = tmp_path / "configuration.md"
    p = subprocess.run([sys.executable, str(GENERATOR), "--schema", str(SCHEMA), "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    made, committed = out.read_text(), REFERENCE.read_text()
    if made != committed:
        diff = "".join(difflib.unified_diff(committed.splitlines(True), made.splitlines(True),
                                            "docs/reference/configuration.md (committed)", "generated from config.schema.json"))
        raise AssertionError(f"docs/reference/configuration.md is stale: run `{REGENERATE}` and commit the result\n{diff[:6000]}")


def test_the_reference_has_every_field_of_the_schema():
    fields = generator().fields(json.loads(SCHEMA.read_text()))
    text = REFERENCE.read_text()
    assert len(fields) > 150, f"the walk found only {len(fields)} fields"
    absent = [f.path for f in fields if f"`{f.path}`" not in text]
    assert not absent, f"fields of the schema missing from the reference: {absent}"
    for path in ["server.auth.oauth.issuer", "servers.<server>.tokenExchange.clientId", "policy.rules[].when",
                 "profiles.<profile>.overrides.<tool>.annotations", "server.auth.people.<person>.subjects"]:
        assert path in {f.path for f in fields}, path


def test_every_field_of_the_schema_has_a_description():
    missing = generator().undescribed(json.loads(SCHEMA.read_text()))
    assert not missing, (
        f"{len(missing)} field(s) of config.schema.json have no description: {', '.join(missing)}. "
        "Give each a doc comment in src/config/file/, then `cargo run -- --print-config-schema > config.schema.json` "
        f"and `{REGENERATE}`."
    )


def test_the_manual_builds_with_no_warning(tmp_path):
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                       cwd=ROOT, capture_output=True, text=True, timeout=180)
    output = p.stdout + p.stderr
    print(output)
    assert p.returncode == 0, f"mkdocs build --strict failed:\n{output}"
    assert "WARNING" not in output, f"mkdocs warned:\n{output}"
    pages = sorted(site.rglob("*.html"))
    html = {page: page.read_text() for page in pages}
    # Every fence was rendered (Python-Markdown leaves one it does not understand as text).
    unrendered = [str(page.relative_to(site)) for page, text in html.items() if "```" in text]
    assert not unrendered, f"pages with an unrendered fenced block: {unrendered}"
    # Every marked example became a JSON code block (docs/hooks/example_blocks.py).
    marked = [b for b in example_blocks() if b.path.parent != ROOT]
    rendered = sum(len(re.findall(r'<pre class="example-(?:config|servers)"><code class="language-json">', t)) for t in html.values())
    assert rendered == len(marked), f"{len(marked)} marked examples in docs/, {rendered} rendered as JSON blocks"
    assert (site / "template-form.png").exists(), "the screenshot is part of the site"


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (MkDocs) gives a heading; GitHub's agrees for the
    headings the README links to."""
    text = re.sub(r"[`*]", "", heading).strip()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path) -> set:
    found = set()
    in_code = False
    for line in path.read_text().split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def test_the_readme_is_short_and_its_links_resolve():
    readme = ROOT / "README.md"
    text = readme.read_text()
    lines = text.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail into docs/"
    # Its first commands are the service on the demo and the whole test suite.
    first = fenced_blocks(readme)[0]
    commands = [line.split("#")[0].strip() for line in first.text.splitlines() if line.strip()]
    assert commands == ["cargo run --release -- --demo", "tests/run.sh"], commands
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (ROOT / file) if file else readme
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(target)
    assert not broken, f"README.md links to what does not exist: {broken}"
