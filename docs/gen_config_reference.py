#!/usr/bin/env python3
"""Writes docs/reference/configuration.md from config.schema.json (the JSON Schema that
`mcp-gen-ui --print-config-schema` prints): every field of the config file by its full dotted
path, with its type, its default and its description.

    python3 docs/gen_config_reference.py            # rewrite docs/reference/configuration.md
    python3 docs/gen_config_reference.py --out F    # write F instead (tests/e2e/test_docs.py)

Standard library only. The schema is JSON Schema 2020-12 as schemars writes it: `$ref` into
`$defs`, `anyOf`/`oneOf` (a `null` alternative makes a field optional, `const` alternatives
make an enumeration), maps as `additionalProperties`, and defaults given on a field or on the
object that holds it.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "config.schema.json"
OUT = ROOT / "docs" / "reference" / "configuration.md"
COMMAND = "python3 docs/gen_config_reference.py"

# What a map's key stands for in a path (`servers.<server>.command`); other maps say <name>.
MAP_KEYS = {"servers": "<server>", "profiles": "<profile>", "overrides": "<tool>", "people": "<person>"}
NO_DEFAULT = object()


@dataclass
class Field:
    """One field of the config file."""

    path: str
    type: str
    default: object  # NO_DEFAULT when the schema gives none
    required: bool
    has_children: bool
    description: str


def literal(value):
    return f"`{json.dumps(value)}`"


def join_or(parts):
    """`a`, `b` or `c`."""
    parts = list(dict.fromkeys(parts))
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def one_line(text):
    return " ".join(text.split())


class Schema:
    """A JSON Schema document, read the way schemars writes one."""

    def __init__(self, doc):
        self.doc = doc

    def resolve(self, node):
        """`node` with its `$ref` (and theirs) merged in; the node's own keys win."""
        for _ in range(50):
            if not (isinstance(node, dict) and "$ref" in node):
                return node
            ref = node["$ref"]
            if not ref.startswith("#/$defs/"):
                raise ValueError(f"only local $defs references are supported, not {ref}")
            merged = dict(self.doc["$defs"][ref[len("#/$defs/"):]])
            merged.update({k: v for k, v in node.items() if k != "$ref"})
            node = merged
        raise ValueError(f"a $ref loop at {ref}")

    def alternatives(self, node):
        """The alternatives of an anyOf/oneOf, resolved; [] for a plain node."""
        node = self.resolve(node)
        return [self.resolve(a) for a in node.get("anyOf", node.get("oneOf", []))]

    def object_part(self, node):
        """The object schema with named properties that `node` is (or may be), else None."""
        node = self.resolve(node)
        if "properties" in node:
            return node
        for alt in self.alternatives(node):
            found = self.object_part(alt)
            if found is not None:
                return found
        return None

    def types(self, node):
        """The values a field may take, one phrase each: `"stdio"`, array of string, `null`."""
        node = self.resolve(node)
        if "const" in node:
            return [literal(node["const"])]
        if "enum" in node:
            return [literal(v) for v in node["enum"]]
        alts = self.alternatives(node)
        if alts:
            return [t for a in alts for t in self.types(a)]
        kinds = node.get("type")
        if kinds is None:
            return ["any JSON value"]
        out = []
        for kind in [kinds] if isinstance(kinds, str) else kinds:
            extra = node.get("additionalProperties")
            if kind == "array":
                out.append(f"array of {self.phrase(node.get('items', {}), grouped=True)}")
            elif kind == "object" and isinstance(extra, dict) and "properties" not in node:
                out.append(f"map of string to {self.phrase(extra, grouped=True)}")
            elif kind == "object" and extra is True and "properties" not in node:
                out.append("object (any keys)")
            elif kind == "null":
                out.append("`null`")
            else:
                out.append(kind)
        return out

    def phrase(self, node, grouped=False):
        """A field's type in words; inside another type, alternatives go in parentheses."""
        parts = list(dict.fromkeys(self.types(node)))
        text = join_or(parts)
        return f"({text})" if grouped and len(parts) > 1 else text

    def description(self, node):
        """The field's description (its own, else its type's), with the descriptions of the
        values an enumeration may take."""
        node = self.resolve(node)
        text = one_line(node.get("description", ""))
        for a in self.alternatives(node):
            if "const" in a and a.get("description"):
                value = one_line(a["description"])
                text += f"{' ' if text else ''}{literal(a['const'])}: {value}{'' if value.endswith('.') else '.'}"
        return text

    def fields(self):
        """Every field of the config file, depth first in the schema's order."""
        out = []

        def walk(obj, prefix, parent_default):
            obj = self.resolve(obj)
            required = set(obj.get("required", []))
            for name, prop in obj.get("properties", {}).items():
                path = f"{prefix}.{name}" if prefix else name
                node = self.resolve(prop)
                if "default" in node:
                    default = node["default"]
                elif isinstance(parent_default, dict) and name in parent_default:
                    default = parent_default[name]
                else:
                    default = NO_DEFAULT
                children = self.object_part(node)
                out.append(Field(path, self.phrase(prop), default, name in required, children is not None, self.description(prop)))
                if children is not None:
                    walk(children, path, default if isinstance(default, dict) else None)
                # Arrays of objects (`policy.rules[]`) and maps of objects (`servers.<server>`).
                for alt in [node] + self.alternatives(node):
                    items, extra = alt.get("items"), alt.get("additionalProperties")
                    if isinstance(items, dict) and self.object_part(items) is not None:
                        walk(self.object_part(items), f"{path}[]", None)
                    if isinstance(extra, dict) and self.object_part(extra) is not None:
                        walk(self.object_part(extra), f"{path}.{MAP_KEYS.get(name, '<name>')}", None)

        walk(self.doc, "", None)
        return out


def fields(schema):
    """Every field of the config file (`schema` is the parsed config.schema.json)."""
    return Schema(schema).fields()


def prose(text):
    """Schema text as Markdown: outside `code` spans, characters Markdown would take for HTML
    or emphasis are escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*").replace("_", "\\_")
    return "".join(parts)


def cell(text):
    return prose(text).replace("|", "\\|")


def default_text(f):
    if f.required:
        return "required"
    if f.default is NO_DEFAULT:
        return "see its fields" if f.has_children and "`null`" not in f.type else "unset"
    if f.has_children and isinstance(f.default, dict):
        return "see its fields"
    return literal(f.default)


def render(schema):
    all_fields = fields(schema)
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated from config.schema.json by docs/gen_config_reference.py: do not edit by hand;",
        f"     run `{COMMAND}` after the schema changes (tests/e2e/test_docs.py checks it). -->",
        "",
        prose(one_line(schema.get("description", ""))),
        "",
        "Every field of the config file (`--config FILE`), by its full path. JSON keys are camelCase;",
        "`[]` in a path is any element of an array, `<server>`, `<profile>`, `<tool>`, `<person>` and",
        "`<name>` any key of a map. A key the schema does not know is refused, naming it. The",
        "schema itself is `config.schema.json` at the top of the repository, also printed by",
        "`mcp-gen-ui --print-config-schema`; [Configuration](../configuration.md) has whole",
        "examples, and `mcp-gen-ui check --config FILE` validates a file.",
        "",
        "Sections: " + ", ".join(f"[`{f.path}`](#{slug(f.path)})" for f in all_fields if "." not in f.path) + ".",
        "",
    ]
    for top in [f for f in all_fields if "." not in f.path]:
        lines += [f"## `{top.path}`", ""]
        if top.description:
            lines += [prose(top.description), ""]
        lines += [f"Type: {top.type}. Default: {default_text(top)}.", ""]
        below = [f for f in all_fields if f.path.startswith(top.path + ".") or f.path.startswith(top.path + "[]")]
        if below:
            lines += ["| field | type | default | description |", "|---|---|---|---|"]
            for f in below:
                lines.append(f"| `{f.path}` | {cell(f.type)} | {cell(default_text(f))} | {cell(f.description)} |")
            lines.append("")
    return "\n".join(lines)


def slug(path):
    """The anchor Python-Markdown's toc (and MkDocs) gives a `## \\`path\\`` heading."""
    return "".join(c for c in path.lower() if c.isalnum() or c in "_-")


def undescribed(schema):
    """Paths of the fields that have no description."""
    return [f.path for f in fields(schema) if not f.description]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schema", type=Path, default=SCHEMA)
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    schema = json.loads(a.schema.read_text())
    text = render(schema)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    missing = undescribed(schema)
    if missing:
        print(f"{len(missing)} field(s) have no description in the schema: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
