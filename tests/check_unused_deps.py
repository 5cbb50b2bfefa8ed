#!/usr/bin/env python3
"""Fails when a Cargo.toml declares a dependency that its crate's Rust sources never name.

For each package of the workspace, every key of [dependencies], [dev-dependencies] and
[build-dependencies] (also under [target.*]) must appear in the package's sources as `name::`,
`name!`, `use name`, `#[name::` or `extern crate name` (dashes read as underscores; a
`package = "..."` rename is named in code by its key, which is what is checked). Comment lines
do not count. Plain Python 3.11+ standard library; run from anywhere.
"""
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Package folders (relative to ROOT) and where their Rust sources live.
PACKAGES = {".": ["src", "tests", "examples", "benches", "build.rs"], "actors": ["src", "tests", "examples", "benches", "build.rs", "build"]}
# Dependencies the sources need without naming them, each with the reason.
ALLOWED = {
    # (none today)
}
SECTIONS = ("dependencies", "dev-dependencies", "build-dependencies")


def declared(manifest: dict) -> set[str]:
    """The dependency keys of every section, including target-specific ones."""
    tables = [manifest] + list(manifest.get("target", {}).values())
    return {key for table in tables for section in SECTIONS for key in table.get(section, {})}


def sources(pkg: Path, places: list[str]) -> str:
    texts = []
    for place in places:
        p = pkg / place
        files = [p] if p.is_file() else sorted(p.rglob("*.rs")) if p.is_dir() else []
        for f in files:
            lines = f.read_text(encoding="utf-8").splitlines()
            texts.append("\n".join(l for l in lines if not l.lstrip().startswith("//")))
    return "\n".join(texts)


def used(name: str, text: str) -> bool:
    n = re.escape(name)
    return re.search(rf"(?<![\w:]){n}(::|!)|\buse\s+{n}\b|\bextern\s+crate\s+{n}\b|#\[{n}::", text) is not None


def main() -> int:
    unused = []
    for folder, places in PACKAGES.items():
        pkg = ROOT / folder
        manifest = tomllib.loads((pkg / "Cargo.toml").read_text(encoding="utf-8"))
        text = sources(pkg, places)
        name = manifest["package"]["name"]
        for dep in sorted(declared(manifest)):
            if dep in ALLOWED.get(name, {}):
                continue
            if not used(dep.replace("-", "_"), text):
                unused.append(f"{name} ({folder}/Cargo.toml): {dep}")
    if unused:
        print("unused dependencies (declared, never named in the sources):")
        print("\n".join(f"  {u}" for u in unused))
        return 1
    print("no unused dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
