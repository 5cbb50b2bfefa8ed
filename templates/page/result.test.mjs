import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { variants } from "./served.mjs";

// A zone far from UTC, so that a date formatted in this process's zone would show another day.
process.env.TZ = "Pacific/Honolulu";

let hostContext = {};
for (const [where, page] of variants(["values.js", "dom.js", "result.js"], { atob, TextDecoder, app: { getHostContext: () => hostContext } })) {
  describe(where, () => {
    const local = (value, ctx) => { hostContext = ctx; return page.local(value); };

    test("sizes: kb and the bytes base64 holds", () => {
      assert.equal(page.kb(0), "0 bytes");
      assert.equal(page.kb(1023), "1023 bytes");
      assert.equal(page.kb(1536), "1.5 KB");
      assert.equal(page.b64size(""), 0);
      assert.equal(page.b64size(undefined), 0);
      assert.equal(page.b64size("YQ=="), 1);
      assert.equal(page.b64size("YWI="), 2);
      assert.equal(page.b64size("YWJj"), 3);
      assert.equal(page.b64size(Buffer.alloc(1000).toString("base64")), 1000);
    });

    test("numbers the host's way, without grouping", () => {
      assert.equal(local(1234.5, { locale: "en-US" }), "1234.5");
      assert.equal(local(1234.5, { locale: "de-DE" }), "1234,5");
      assert.equal(local(2024, { locale: "en-US" }), "2024", "a year reads as it is");
      assert.equal(local(1 / 3, { locale: "en-US" }), "0.333333");
      assert.equal(local(Infinity, { locale: "en-US" }), "Infinity");
      assert.equal(local(5, { locale: "not a locale!" }), "5", "a locale Intl refuses: the value as sent");
    });

    test("dates the host's way: dates alone in UTC, times in the host's zone", () => {
      assert.equal(local("2024-03-05", { locale: "en-US", timeZone: "Pacific/Honolulu" }), "Mar 5, 2024");
      assert.equal(local("2024-03-05T00:30:00Z", { locale: "en-US" }).slice(0, 11), "Mar 4, 2024", "no host zone: this device's");
      const shown = local("2024-03-05T23:30:00Z", { locale: "en-US", timeZone: "Asia/Tokyo" });
      assert.match(shown, /^Mar 6, 2024, 8:30\sAM$/);
      assert.equal(local("2024-03-05T23:30:00Z", { locale: "en-US", timeZone: "Mars/Base" }), "2024-03-05T23:30:00Z");
      assert.equal(local("2024-13-45", { locale: "en-US" }), "2024-13-45", "not a date");
      assert.equal(local("soon", { locale: "en-US" }), "soon");
      assert.equal(local(null, {}), "null");
      assert.equal(local(true, {}), "true");
    });

    test("files: a type by extension, text decoded as UTF-8", () => {
      assert.equal(page.fileMime("report.CSV"), "text/csv");
      assert.equal(page.fileMime("chart.png"), "image/png");
      assert.equal(page.fileMime("archive.tar.gz"), "application/octet-stream");
      assert.equal(page.fileMime("README"), "application/octet-stream");
      assert.equal(page.fileMime(undefined), "application/octet-stream");
      assert.equal(page.fileMime("x.constructor"), "application/octet-stream", "an inherited key is no MIME type");
      assert.equal(page.decodeText(Buffer.from("héllo ✓").toString("base64")), "héllo ✓");
      assert.equal(page.decodeText("not base64!"), null);
    });

    test("shapes: which values are records for a table, which are scalars", () => {
      assert.equal(page.isRecordList([{ a: 1 }, { b: 2 }]), true);
      assert.equal(page.isRecordList([]), false);
      assert.equal(page.isRecordList([{ a: 1 }, [1]]), false);
      assert.equal(page.isRecordList([{ a: 1 }, null]), false);
      assert.equal(page.isRecordList(Array.from({ length: 2001 }, () => ({}))), false, "too many rows for a table");
      assert.equal(page.scalar(null), true);
      assert.equal(page.scalar("x"), true);
      assert.equal(page.scalar([]), false);
      assert.equal(page.scalar({}), false);
    });
  });
}
