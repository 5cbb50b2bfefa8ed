// templates/provisional.js's own check of the preview it is sent (issue 52): the service keeps
// to its lists (actors/src/generation/preview.rs), and the page checks again rather than trust
// the wire. The script runs here as in the page, in a node:vm context with a small document
// and a runtime whose host answers _ui_page_status with a hostile tree; what it builds is read
// back from that document.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";

const SOURCE = readFileSync(new URL("provisional.js", import.meta.url), "utf8");

/** Just enough of a DOM for the provisional page: elements, text, fragments, attributes. */
class FakeNode {
  constructor(doc) { this.ownerDocument = doc; this.childNodes = []; this.parentNode = null; }
  appendChild(child) {
    if (child instanceof FakeFragment) {
      for (const c of [...child.childNodes]) this.appendChild(c);
      return child;
    }
    if (child.parentNode) child.parentNode.removeChild(child);
    child.parentNode = this;
    this.childNodes.push(child);
    return child;
  }
  insertBefore(child, ref) {
    if (!ref) return this.appendChild(child);
    if (child.parentNode) child.parentNode.removeChild(child);
    child.parentNode = this;
    this.childNodes.splice(this.childNodes.indexOf(ref), 0, child);
    return child;
  }
  removeChild(child) {
    this.childNodes.splice(this.childNodes.indexOf(child), 1);
    child.parentNode = null;
    return child;
  }
  get firstChild() { return this.childNodes[0] || null; }
  get nextSibling() { const p = this.parentNode; return p ? p.childNodes[p.childNodes.indexOf(this) + 1] || null : null; }
  contains(n) { for (; n; n = n.parentNode) if (n === this) return true; return false; }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(""); }
  set textContent(v) { this.childNodes = []; this.appendChild(new FakeText(this.ownerDocument, String(v))); }
}
class FakeText extends FakeNode {
  constructor(doc, data) { super(doc); this.data = data; }
  get textContent() { return this.data; }
}
class FakeFragment extends FakeNode {}
class FakeElement extends FakeNode {
  constructor(doc, tag) {
    super(doc);
    this.localName = tag;
    this.attributes = new Map();
    this.disabled = false;
    this.tabIndex = 0;
    this.hidden = false;
    this.listeners = [];
  }
  setAttribute(k, v) { this.attributes.set(String(k), String(v)); }
  getAttribute(k) { return this.attributes.has(k) ? this.attributes.get(k) : null; }
  addEventListener(type, f) { this.listeners.push(type); }
  set id(v) { this.setAttribute("id", v); }
  get id() { return this.getAttribute("id") || ""; }
  set className(v) { this.setAttribute("class", v); }
  set type(v) { this.setAttribute("type", v); }
}
function fakeDocument() {
  const doc = { documentElement: { lang: "en" }, listeners: [] };
  doc.createElement = (tag) => new FakeElement(doc, String(tag).toLowerCase());
  doc.createTextNode = (data) => new FakeText(doc, String(data));
  doc.createDocumentFragment = () => new FakeFragment(doc);
  doc.addEventListener = (type) => doc.listeners.push(type);
  const body = doc.createElement("body");
  const config = doc.createElement("script");
  config.textContent = JSON.stringify({ tool: "get_forecast", statusTool: "_ui_page_status", waitMs: 2500 });
  const box = doc.createElement("div");
  box.id = "mcp-gen-ui-writing";
  const text = doc.createElement("span");
  text.id = "mcp-gen-ui-writing-text";
  box.appendChild(text);
  body.appendChild(box);
  const byId = { "mcp-gen-ui-provisional": config, "mcp-gen-ui-writing": box, "mcp-gen-ui-writing-text": text };
  doc.getElementById = (id) => byId[id] || null;
  doc.body = body;
  return doc;
}

/** Runs provisional.js with a host that answers its first status call with `tree` (and never
 * its second), and gives back the preview section it built. */
async function preview(tree) {
  const document = fakeDocument();
  const asked = [];
  const app = {
    getHostContext: () => ({ locale: "en-US" }),
    getHostCapabilities: () => ({ serverTools: {} }),
    callServerTool: (req) => {
      asked.push(req);
      if (asked.length > 1) return new Promise(() => {});
      return Promise.resolve({ structuredContent: { state: "writing", phase: "writing", chars: 1234, elapsedMs: 2000, preview: tree } });
    },
    replacePage: () => assert.fail("nothing was written yet"),
  };
  const context = vm.createContext({ document, setTimeout, Intl, McpGenUiRuntime: { current: () => app } });
  vm.runInContext(SOURCE, context, { filename: "provisional.js" });
  for (let i = 0; i < 50 && asked.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(asked[0].arguments.preview, true, "the page asks for the preview");
  const section = document.body.childNodes.find((n) => n.getAttribute && n.getAttribute("id") === "mcp-gen-ui-preview");
  assert.ok(section, "the preview was shown");
  return section;
}

function* elements(node) {
  for (const c of node.childNodes) {
    if (c instanceof FakeElement) {
      yield c;
      yield* elements(c);
    }
  }
}

const KEPT = new Set(["h1", "h2", "h3", "h4", "h5", "h6", "p", "div", "span", "section", "article", "header", "footer", "main", "nav",
  "aside", "form", "fieldset", "legend", "label", "input", "select", "option", "optgroup", "textarea", "button", "table", "caption",
  "thead", "tbody", "tfoot", "tr", "th", "td", "ul", "ol", "li", "dl", "dt", "dd", "strong", "em", "b", "i", "u", "small", "code", "pre",
  "blockquote", "br", "hr", "figure", "figcaption", "details", "summary", "output", "progress", "meter", "abbr", "time", "mark", "sub",
  "sup"]);

// What a service that kept nothing back could send: everything that runs, loads, names or takes
// input, and malformed nodes.
const HOSTILE = JSON.parse(JSON.stringify([
  ["h1", { class: "t", onclick: "ran()", id: "open", name: "createElement", style: "background:url(https://evil.example/h)" }, ["Weather"]],
  ["script", {}, ["globalThis.ran = 1"]],
  ["img", { src: "https://evil.example/i.png", onerror: "ran()" }, []],
  ["a", { href: "javascript:ran()" }, ["a link"]],
  ["form", { action: "https://evil.example/f", method: "post", name: "open", target: "_top" }, [
    ["input", { name: "write", value: "Oslo", type: "text", formaction: "https://evil.example/i", autofocus: "", onfocus: "ran()" }, []],
    ["button", { type: "submit", onclick: "ran()", formaction: "https://evil.example/b" }, ["Go"]],
    ["select", { name: "body" }, [["option", { value: "1" }, ["one"]]]],
    ["textarea", { name: "cookie" }, ["typed?"]],
  ]],
  ["svg", {}, [["animate", { onbegin: "ran()", attributeName: "x" }, []]]],
  ["style", {}, ["body{background:url(https://evil.example/s)}"]],
  ["iframe", { src: "https://evil.example/f" }, []],
  ["link", { rel: "stylesheet", href: "https://evil.example/l.css" }, []],
  ["DIV", {}, ["upper-case names are not the list's"]],
  ["p", { class: 7, title: ["x"], "aria-label": "ok" }, ["attributes that are not strings are dropped"]],
  ["div", JSON.parse('{"__proto__": {"onclick": "ran()"}, "lang": "en"}'), ["a __proto__ key is an attribute name like any other"]],
  42, null, {}, ["p"], ["p", null, "not a list"], [["p"]], "plain text",
]));

test("a hostile preview: only listed elements and attributes are built, its controls disabled, inside an inert box", async () => {
  const section = await preview(HOSTILE);
  assert.equal(section.getAttribute("inert"), "", "the box takes no input");
  const built = [...elements(section)];
  const tags = built.map((e) => e.localName);
  assert.ok(tags.length > 5, `something was built: ${tags}`);
  for (const tag of tags) assert.ok(KEPT.has(tag), `${tag} is not on the list`);
  for (const gone of ["script", "img", "a", "svg", "animate", "style", "iframe", "link"]) assert.ok(!tags.includes(gone), gone);
  const names = new Set(built.flatMap((e) => [...e.attributes.keys()]));
  assert.deepEqual([...names].sort(), ["aria-label", "class", "lang", "type", "value"], "attributes kept");
  for (const e of built.filter((e) => ["input", "select", "textarea", "button"].includes(e.localName))) {
    assert.equal(e.disabled, true, `${e.localName} is disabled`);
    assert.equal(e.tabIndex, -1, `${e.localName} cannot be reached with the keyboard`);
  }
  assert.equal(built.find((e) => e.localName === "button").getAttribute("type"), "button", "a preview's button submits nothing");
  assert.ok(built.every((e) => e.listeners.length === 0), "no handler on anything built");
  const text = section.textContent;
  assert.ok(text.includes("Weather") && text.includes("plain text") && text.includes("typed?"));
  assert.ok(!text.includes("ran") && !text.includes("evil"), `nothing of what was dropped shows: ${text}`);
});

test("a preview of more nodes than the page builds is cut at its cap", async () => {
  const many = Array.from({ length: 3000 }, (_, i) => ["p", {}, [`p${i}`]]);
  const section = await preview(many);
  const built = [...elements(section)];
  // Each paragraph is two nodes (the element and its text): 1,500 nodes in all.
  assert.equal(built.length, 750);
  assert.equal(section.textContent.includes("p749") && !section.textContent.includes("p750"), true);
  // Nesting counts too.
  let deep = ["x"];
  for (let i = 0; i < 3000; i++) deep = [["div", {}, deep]];
  assert.equal([...elements(await preview(deep))].length, 1500);
});
