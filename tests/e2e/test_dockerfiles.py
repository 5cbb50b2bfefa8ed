"""The image's runtime stage is written out twice, in deploy/Dockerfile (after the compile stage)
and deploy/Dockerfile.prebuilt (a binary built elsewhere; what the compose tests build), since
a Dockerfile cannot include another. This keeps the two the same: a change to one that is not
made to the other fails here, before an image built one way differs from one built the other."""

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
BINARY_COPY = re.compile(r"^COPY (--from=build /src/target/release/)?mcp-gen-ui /usr/local/bin/mcp-gen-ui$")


def runtime_stage(name: str) -> list[str]:
    """The lines from `FROM debian:bookworm-slim` to the one that copies the binary in."""
    lines = (DEPLOY / name).read_text().splitlines()
    start = lines.index("FROM debian:bookworm-slim")
    end = next(i for i, line in enumerate(lines) if BINARY_COPY.match(line))
    assert end > start, f"{name}: the binary is copied in before the runtime stage starts"
    assert end == len(lines) - 1, f"{name}: the binary must be the last layer (lines after it: {lines[end + 1:]})"
    return lines[start:end]


def test_both_dockerfiles_have_the_same_runtime_stage():
    full, prebuilt = runtime_stage("Dockerfile"), runtime_stage("Dockerfile.prebuilt")
    assert full == prebuilt, "deploy/Dockerfile and deploy/Dockerfile.prebuilt differ in the runtime stage:\n" + "\n".join(
        f"- {a}\n+ {b}" for a, b in zip(full, prebuilt) if a != b) + (f"\n(lengths {len(full)} and {len(prebuilt)})" if len(full) != len(prebuilt) else "")


def test_no_stage_needs_a_file_that_is_not_in_its_context():
    # The full build's context is the repository's root; the prebuilt one's a folder holding the
    # binary alone: no wildcard sources that let a missing file pass silently.
    for name in ("Dockerfile", "Dockerfile.prebuilt"):
        for line in (DEPLOY / name).read_text().splitlines():
            if line.startswith("COPY"):
                assert not re.search(r"[\[\]*?]", line), f"{name}: a wildcard in {line!r}"
    prebuilt = (DEPLOY / "Dockerfile.prebuilt").read_text()
    assert "rust:" not in prebuilt and prebuilt.count("\nFROM ") == 1, "Dockerfile.prebuilt must be one stage, with no Rust image"
