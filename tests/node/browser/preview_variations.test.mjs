// Issue 21, item 3: the preview offers what hosts vary (theme, locale, width, display modes,
// host capabilities, host style variables), each choice in the URL so that a link reproduces
// it; every variation loads with a clean console, and the ones a page can see take effect.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { launch, startProxy } from "./views.mjs";

let browser, proxy;
before(async () => {
  browser = await launch();
  proxy = await startProxy(["--demo", "--provider", "offline"], "preview-variations");
});
after(async () => { proxy?.stop(); await browser?.close(); });

const VARIATIONS = ["theme=dark", "locale=de-DE", "width=360", "modes=fullscreen", "caps=none", "vars=on",
  "theme=dark&vars=on&locale=ja-JP&width=600&modes=fullscreen"];

function viewFrame(p) {
  return p.frames().find((f) => f.parentFrame() && f.parentFrame().parentFrame() === p.mainFrame());
}

for (const v of VARIATIONS) {
  test(`preview variation ${v} loads with a clean console`, async () => {
    const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors = [];
    p.on("pageerror", (e) => errors.push(String(e)));
    p.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    // Every frame keeps what it is sent, so the test reads what the View was told at
    // ui/initialize, not only what the URL says.
    await p.addInitScript(() => {
      window.addEventListener("message", (e) => { (window.__seen = window.__seen || []).push(e.data); }, true);
    });
    try {
      await p.goto(`${proxy.base}/preview?tool=get_forecast&${v}`);
      await p.locator("#status").filter({ hasText: "View connected: get_forecast" }).waitFor({ timeout: 15000 });
      const url = new URL(p.url());
      for (const [k, val] of new URLSearchParams(v)) assert.equal(url.searchParams.get(k), val, `the URL keeps ${k}`);
      const view = viewFrame(p);
      await view.locator("body[data-ready=true]").waitFor();
      const seen = await view.evaluate(() => ({ bg: getComputedStyle(document.body).backgroundColor, lang: document.documentElement.lang, theme: document.documentElement.getAttribute("data-theme") }));
      if (v.includes("vars=on")) assert.equal(seen.bg, v.includes("theme=dark") ? "rgb(38, 38, 36)" : "rgb(250, 249, 245)", "the host's palette paints the View");
      if (v.includes("locale=de-DE")) assert.equal(seen.lang, "de-DE");
      if (v.includes("theme=dark")) assert.equal(seen.theme, "dark");

      // Read in the sandbox frame, which relays every message to the View (the View's own
      // document is written by that frame, and an init script does not always run there first).
      const init = await view.parentFrame().evaluate(() => (window.__seen || []).map((d) => (typeof d === "string" ? JSON.parse(d) : d))
        .find((m) => m && m.result && m.result.hostContext));
      assert.ok(init, "the View was sent its ui/initialize answer");
      const modes = init.result.hostContext.availableDisplayModes;
      // The width chosen is the container size the View is told, and what its page lays out in.
      const told = init.result.hostContext.containerDimensions;
      for (const [choice, px] of [["width=360", 360], ["width=600", 600]]) {
        if (!v.includes(choice)) continue;
        assert.ok(told && told.width > 300 && told.width <= px, `the View was told a container of ${JSON.stringify(told)} for ${choice}`);
        const laidOut = await view.evaluate(() => ({ css: getComputedStyle(document.documentElement).getPropertyValue("--host-width").trim(), inner: window.innerWidth }));
        assert.equal(laidOut.css, `${told.width}px`, "the runtime applied the width it was told");
        assert.ok(laidOut.inner <= px, `the View's frame is ${laidOut.inner} px wide for ${choice}`);
      }
      assert.deepEqual(modes, v.includes("modes=fullscreen") ? ["inline", "fullscreen"] : ["inline"], "the View is told the display modes chosen");
      if (v.includes("caps=none")) assert.deepEqual(init.result.hostCapabilities, {}, "the View is told the host offers nothing");
      else assert.ok(init.result.hostCapabilities.downloadFile && init.result.hostCapabilities.openLinks, "the View is told what the host offers");
      assert.deepEqual(errors, []);
    } finally {
      await p.close();
    }
  });
}

test("a choice made in the header goes into the URL and reaches the View", async () => {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  try {
    await p.goto(`${proxy.base}/preview?tool=get_forecast`);
    await p.locator("#status").filter({ hasText: "View connected: get_forecast" }).waitFor({ timeout: 15000 });
    await p.getByLabel("Locale").selectOption("de-DE");
    await p.waitForURL(/locale=de-DE/);
    await p.locator("#status").filter({ hasText: "View connected: get_forecast" }).waitFor({ timeout: 15000 });
    await viewFrame(p).locator("html[lang=de-DE]").waitFor({ timeout: 10000 });
    await p.getByLabel("Host styles").selectOption("on");
    await p.waitForURL(/vars=on/);
    assert.match(p.url(), /locale=de-DE/, "earlier choices stay");
    assert.deepEqual(errors, []);
  } finally {
    await p.close();
  }
});
