// Runs a stdio MCP server and records what reaches it: `node tee-upstream.mjs LOG CMD ARGS...`.
// Every tools/call request written to the server's stdin is appended to LOG as one JSON line
// {name, arguments}; everything else passes through untouched, both ways.
import { appendFileSync } from "node:fs";
import { spawn } from "node:child_process";

const [log, cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ["pipe", "inherit", "inherit"] });
let pending = "";
process.stdin.on("data", (chunk) => {
  child.stdin.write(chunk);
  pending += chunk.toString("utf8");
  let nl;
  while ((nl = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    try {
      const msg = JSON.parse(line);
      if (msg.method === "tools/call") appendFileSync(log, JSON.stringify({ name: msg.params.name, arguments: msg.params.arguments }) + "\n");
    } catch { /* not JSON: not ours to judge */ }
  }
});
process.stdin.on("end", () => child.stdin.end());
child.on("exit", (code) => process.exit(code ?? 1));
