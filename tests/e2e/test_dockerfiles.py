"""The image's runtime stage is written out twice, in deploy/Dockerfile (after the compile stage)
and deploy/Dockerfile.prebuilt (a binary built elsewhere; what the compose tests build), since
a Dockerfile cannot include another. This keeps the two the same: a change to one that is not
made to the other fails here, before an image built one way differs from one built the other."""

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
BINARY_COPY = re.compile(r"^COPY (--from=build /src/target/dist/)?mcp-gen-ui /usr/local/bin/mcp-gen-ui$")


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


def test_no_wildcards_and_the_prebuilt_image_needs_no_rust():
    # The full build's context is the repository's root; the prebuilt one's a folder holding the
    # binary alone: no wildcard sources that let a missing file pass silently.
    for name in ("Dockerfile", "Dockerfile.prebuilt"):
        for line in (DEPLOY / name).read_text().splitlines():
            if line.startswith("COPY"):
                assert not re.search(r"[\[\]*?]", line), f"{name}: a wildcard in {line!r}"
    prebuilt = (DEPLOY / "Dockerfile.prebuilt").read_text()
    assert "rust:" not in prebuilt and prebuilt.count("\nFROM ") == 1, "Dockerfile.prebuilt must be one stage, with no Rust image"


def test_the_compile_stage_copies_every_file_the_build_reads():
    """What `cargo build` reads from outside the crates' own folders (include_str! paths, what
    actors/build.rs reads) is copied into the compile stage, exists, and is not kept out of the
    build context by .dockerignore."""
    root = DEPLOY.parent
    copied = set()
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            copied.update(line.split()[1:-1])
    ignored = {x.strip().strip("/") for x in (root / ".dockerignore").read_text().splitlines() if x.strip() and not x.startswith("#")}
    for source in copied:
        assert (root / source).exists(), f"deploy/Dockerfile copies {source}, which is not in the repository"
        assert source.split("/")[0] not in ignored, f"deploy/Dockerfile copies {source}, which .dockerignore keeps out"
    needed = set()
    for rs in [*root.glob("src/**/*.rs"), *root.glob("actors/src/**/*.rs"), *root.glob("actors/build/**/*.rs")]:
        for rel in re.findall(r'include_str!\("([^"]+)"\)', rs.read_text()):
            target = (rs.parent / rel).resolve()
            needed.add(target.relative_to(root).parts[0])
    for rel in re.findall(r'join\("\.\./([\w.-]+)"\)', (root / "actors" / "build.rs").read_text()):
        needed.add(rel)
    assert "templates" in needed and "prompts" in needed, needed
    missing = {n for n in needed if n not in copied and n not in ("src", "actors")}
    assert not missing, f"the build reads {sorted(missing)}, which deploy/Dockerfile does not copy"
