// Accessibility check of pages in headless Chromium, for tests/browser.rs.
//
// Usage: node axe.mjs <chromium> <axe.min.js> <width>x<height> <url>...
//
// Starts Chromium with a DevTools port in a fresh profile, and for each URL: opens it
// at the given window size, waits for the load event, evaluates axe-core's source in
// the page (DevTools evaluation, so the page's Content-Security-Policy stays as
// served) and runs `axe.run` with the WCAG 2 A/AA rules. Prints one JSON line per URL:
// {url, violations: [{id, impact, help, nodes: [selector]}], console: [text]}, where
// `console` holds console errors and warnings, uncaught exceptions and browser log
// errors (a CSP refusal is one). Needs Node 22 (global WebSocket).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [chromium, axePath, size, ...urls] = process.argv.slice(2);
const [width, height] = size.split("x").map(Number);
const axeSource = readFileSync(axePath, "utf8");
const profile = mkdtempSync(join(tmpdir(), "axe-profile-"));
const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-quic",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0",
  `--user-data-dir=${profile}`, `--window-size=${width},${height}`, "about:blank",
], { stdio: "ignore" });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const portFile = join(profile, "DevToolsActivePort");
for (let i = 0; i < 300 && !existsSync(portFile); i++) await sleep(100);
const [port, path] = readFileSync(portFile, "utf8").trim().split("\n");
const socket = new WebSocket(`ws://127.0.0.1:${port}${path}`);
await new Promise((resolve, reject) => { socket.onopen = resolve; socket.onerror = reject; });

let nextId = 1;
const pending = new Map();
const listeners = [];
socket.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.id && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(new Error(JSON.stringify(message.error)));
    else resolve(message.result);
  } else if (message.method) {
    for (const listen of listeners) listen(message);
  }
};
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = nextId++;
  pending.set(id, { resolve, reject });
  socket.send(JSON.stringify({ id, method, params, sessionId }));
});

const finish = (code) => {
  try { socket.close(); } catch {}
  browser.kill("SIGKILL");
  try { rmSync(profile, { recursive: true, force: true }); } catch {}
  process.exit(code);
};

try {
  for (const url of urls) {
    const { targetId } = await send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
    const console = [];
    let loaded;
    const load = new Promise((resolve) => { loaded = resolve; });
    listeners.length = 0;
    listeners.push((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === "Page.loadEventFired") loaded();
      if (m.method === "Runtime.consoleAPICalled" && ["error", "warning", "assert"].includes(m.params.type)) {
        console.push(`console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description ?? "").join(" ")}`);
      }
      if (m.method === "Runtime.exceptionThrown") {
        console.push(`exception: ${m.params.exceptionDetails.exception?.description ?? m.params.exceptionDetails.text}`);
      }
      if (m.method === "Log.entryAdded" && ["error", "warning"].includes(m.params.entry.level)) {
        console.push(`log.${m.params.entry.level}: ${m.params.entry.text}${m.params.entry.url ? ` (${m.params.entry.url})` : ""}`);
      }
    });
    await send("Page.enable", {}, sessionId);
    await send("Runtime.enable", {}, sessionId);
    await send("Log.enable", {}, sessionId);
    await send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: width < 600 }, sessionId);
    await send("Page.navigate", { url }, sessionId);
    await Promise.race([load, sleep(30000)]);
    await send("Runtime.evaluate", { expression: axeSource }, sessionId);
    const run = await send("Runtime.evaluate", {
      expression: `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}, resultTypes: ["violations"]})
        .then((r) => JSON.stringify(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}))))`,
      awaitPromise: true,
      returnByValue: true,
    }, sessionId);
    const violations = JSON.parse(run.result.value ?? "[]");
    process.stdout.write(JSON.stringify({ url, violations, console }) + "\n");
    await send("Target.closeTarget", { targetId });
  }
  finish(0);
} catch (error) {
  process.stderr.write(`axe.mjs: ${error.stack ?? error}\n`);
  finish(1);
}
