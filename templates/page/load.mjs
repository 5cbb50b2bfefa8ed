// For the tests beside the parts: runs parts of the page script in a fresh context, strict and
// in one scope as in the page, and gives that context (its functions and tables) back. The parts
// stay plain browser scripts; `globals` stands in for what the page around them provides.
import { readFileSync } from "node:fs";
import vm from "node:vm";

export const PAGE_DIR = new URL(".", import.meta.url);

export function load(parts, globals = {}) {
  const context = vm.createContext({ ...globals });
  const code = '"use strict";\n' + parts.map((name) => readFileSync(new URL(name, PAGE_DIR), "utf8")).join("\n");
  vm.runInContext(code, context, { filename: parts.join(" + ") });
  return context;
}

/** A value made in the context, rebuilt here (deepStrictEqual compares prototypes across realms). */
export function plain(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
