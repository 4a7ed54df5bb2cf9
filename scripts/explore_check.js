#!/usr/bin/env node
// Opens a `graft explore` page in headless Chromium (Debian's /usr/bin/chromium, driven over
// the DevTools protocol on --remote-debugging-pipe: no npm package needed) and checks it:
//   - no console errors and no uncaught exceptions while it loads and while it is used;
//   - it opens readable: the first layer's node in view, its label at 11 px or more;
//   - every region and every host op of the partition report (REPORT.json, from
//     `graft partition --report json`) is listed on the page, and the graph has one node per
//     layer that is not folded into another (weights are details, not nodes);
//   - typing a layer name in the search box and pressing Enter selects that layer and shows its
//     region (or "host").
// Saves a screenshot of the first view (SCREENSHOT with _first before .png) and one of the page
// with the layer selected.
//
//   node scripts/explore_check.js PAGE.html REPORT.json LAYER SCREENSHOT.png
// Exit status 0 when every check passes; the failures are printed otherwise.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [page, reportPath, layer, shot] = process.argv.slice(2);
if (!shot) {
  console.error("usage: explore_check.js PAGE.html REPORT.json LAYER SCREENSHOT.png");
  process.exit(2);
}
const report = JSON.parse(fs.readFileSync(reportPath, "utf8"));
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "graft-chromium-"));
const browser = spawn(chromium, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
  "--disable-extensions", "--disable-background-networking", "--remote-debugging-pipe",
  `--user-data-dir=${profile}`, "--window-size=1400,900", "about:blank"],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
browser.stdio[2].on("data", d => { stderr += d; });

let nextId = 1, buf = "";
const pending = new Map(), listeners = [];
browser.stdio[4].on("data", chunk => {
  buf += chunk.toString("utf8");
  let z;
  while ((z = buf.indexOf("\0")) >= 0) {
    const msg = JSON.parse(buf.slice(0, z));
    buf = buf.slice(z + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve(msg.result);
    } else if (msg.method) {
      listeners.forEach(l => l(msg));
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  browser.stdio[3].write(JSON.stringify(msg) + "\0");
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function waitFor(method, sessionId, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out waiting for ${method}`)), ms);
    listeners.push(m => { if (m.method === method && m.sessionId === sessionId) { clearTimeout(t); resolve(m.params); } });
  });
}

const failures = [], consoleErrors = [];
function check(ok, what) { if (!ok) failures.push(what); }

async function main() {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  listeners.push(m => {
    if (m.sessionId !== sessionId) return;
    if (m.method === "Runtime.consoleAPICalled" && (m.params.type === "error" || m.params.type === "assert"))
      consoleErrors.push("console." + m.params.type + ": " + m.params.args.map(a => a.value || a.description).join(" "));
    if (m.method === "Runtime.exceptionThrown")
      consoleErrors.push("exception: " + (m.params.exceptionDetails.exception || {}).description || m.params.exceptionDetails.text);
    if (m.method === "Log.entryAdded" && m.params.entry.level === "error")
      consoleErrors.push("log: " + m.params.entry.text + " " + (m.params.entry.url || ""));
  });
  await send("Runtime.enable", {}, sessionId);
  await send("Log.enable", {}, sessionId);
  await send("Page.enable", {}, sessionId);
  const loaded = waitFor("Page.loadEventFired", sessionId, 60000);
  await send("Page.navigate", { url: "file://" + path.resolve(page) }, sessionId);
  await loaded;
  const evaluate = async expr => {
    const r = await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true }, sessionId);
    if (r.exceptionDetails) throw new Error("evaluate: " + JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };

  // the first view: readable, at the start
  const first = await evaluate(`(() => { const g = document.querySelector("#graph svg g.node[id^=L]"), t = g && g.querySelector("text");
    if (!t) return null;
    const b = g.getBoundingClientRect(), c = document.getElementById("graph").getBoundingClientRect();
    return {px: t.getScreenCTM().a * parseFloat(t.getAttribute("font-size")), inView: b.top >= c.top && b.bottom <= c.bottom && b.left >= c.left && b.right <= c.right}; })()`);
  check(first && first.px >= 11, `the first view's labels are ${first && first.px.toFixed(1)} px high`);
  check(first && first.inView, "the first view does not show the first layer");
  const firstPng = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(shot.replace(/\.png$/, "") + "_first.png", Buffer.from(firstPng.data, "base64"));

  // every region and host op of the report is on the page
  for (const r of report.regions || [])
    check(await evaluate(`!!document.querySelector(${JSON.stringify(`[data-region="${r.symbol}"]`)})`), `region ${r.symbol} is not listed`);
  const hostKeys = await evaluate(`[...document.querySelectorAll("[data-host]")].map(e => e.getAttribute("data-host"))`);
  for (const h of report.host || []) {
    const key = h.var + " " + (h.layers || []).join(",");
    check(hostKeys.includes(key), `host op ${key} is not listed`);
  }
  check(hostKeys.length === (report.host || []).length, `${hostKeys.length} host ops listed, the report has ${(report.host || []).length}`);
  const counts = await evaluate(`({nodes: document.querySelectorAll("#graph svg g.node[id^=L]").length, layers: JSON.parse(document.getElementById("graft-data").textContent).layers.filter(l => l.folded_into == null).length})`);
  check(counts.nodes === counts.layers && counts.nodes > 0, `graph has ${counts.nodes} nodes for ${counts.layers} layers`);

  // search: type the name, press Enter
  await evaluate(`(() => { const s = document.getElementById("search"); s.focus(); s.value = ${JSON.stringify(layer)};
    s.dispatchEvent(new Event("input", {bubbles: true}));
    s.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true})); })()`);
  const sel = await evaluate(`({name: (document.getElementById("sel-name") || {}).textContent, region: (document.getElementById("sel-region") || {}).textContent,
    node: !!document.querySelector("#graph g.node.sel")})`);
  check(sel.name === layer, `searching ${layer} selected ${sel.name}`);
  check(sel.node, `searching ${layer} did not mark its node in the graph`);
  // with --profile, a layer computed by oneDNN primitives lists them with implementation and time
  const prof = await evaluate(`(() => { const D = JSON.parse(document.getElementById("graft-data").textContent);
    const l = D.layers.find(x => x.name === ${JSON.stringify(layer)});
    return {want: !!(D.primitives && l && l.prims && l.prims.length), shown: document.getElementById("detail").textContent.includes("primitives")}; })()`);
  check(!prof.want || prof.shown, `${layer} has profiled primitives the page does not show`);
  const region = (report.regions || []).find(r => (r.layers || []).includes(layer));
  const want = region ? "region " + region.symbol : "host";
  check(sel.region === want, `${layer} shows "${sel.region}", expected "${want}"`);

  // the region entry highlights its layers
  if ((report.regions || []).length)
    await evaluate(`document.querySelector("[data-region]").click()`);
  await evaluate(`document.getElementById("search").dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}))`);

  const png = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  fs.writeFileSync(shot, Buffer.from(png.data, "base64"));
  consoleErrors.forEach(e => failures.push(e));
  await send("Browser.close").catch(() => {});
}

const timer = setTimeout(() => { failures.push("timed out"); finish(); }, 120000);
let exited = false;
browser.on("exit", () => { exited = true; });
async function finish() {
  clearTimeout(timer);
  if (!exited) {
    const gone = new Promise(r => browser.once("exit", r));
    try { browser.kill(); } catch (e) { /* gone */ }
    await Promise.race([gone, new Promise(r => setTimeout(r, 5000))]);
  }
  try { fs.rmSync(profile, { recursive: true, force: true, maxRetries: 3 }); } catch (e) { /* a leftover temp dir */ }
  if (failures.length) {
    failures.forEach(f => console.error("explore_check: " + f));
    process.exit(1);
  }
  console.log(`explore_check: ${page}: ok (${shot})`);
  process.exit(0);
}
main().then(finish, e => { failures.push(e.message + (stderr ? "\n" + stderr.slice(-2000) : "")); finish(); });
