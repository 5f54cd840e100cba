// Model Explorer in Debian's headless chromium (playwright-core from vscode-client/node_modules).
// Called by tests/test_dispatch_graph.py with one JSON argument:
//   {url, chromium, requireFrom, screenshot, expect: [texts the side panel must show]}
// Opens the URL (a graph with a node selected), waits for the graph to render and for the side
// panel to show the selected node's attributes, takes a screenshot, prints one JSON line:
//   {loadSeconds, panel: "<side panel text>", title, errors: [...]}
import { createRequire } from "node:module";

const cfg = JSON.parse(process.argv[2]);
const { chromium } = createRequire(cfg.requireFrom)("playwright-core");
const seen = { errors: [] };
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-dev-shm-usage", "--use-gl=swiftshader", "--enable-unsafe-swiftshader",
    "--ignore-gpu-blocklist"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(cfg.timeout || 120000);
  page.on("pageerror", (e) => seen.errors.push(String(e)));
  const t0 = Date.now();
  await page.goto(cfg.url);
  // The graph renders into a canvas; the side panel lists the selected node's attributes.
  await page.locator("canvas").first().waitFor({ state: "visible" });
  const panel = page.locator("info-panel, .info-panel, side-panel").first();
  const deadline = Date.now() + (cfg.timeout || 120000);
  let text = "";
  while (Date.now() < deadline) {
    text = (await page.locator("body").innerText()).replace(/\s+/g, " ");
    if ((cfg.expect || []).every((t) => text.includes(t))) break;
    await page.waitForTimeout(250);
  }
  seen.loadSeconds = (Date.now() - t0) / 1000;
  await page.waitForTimeout(1500); // the layout's animation settles before the picture
  if (await panel.count()) seen.panel = (await panel.innerText()).replace(/\s+/g, " ");
  seen.body = (await page.locator("body").innerText()).replace(/\s+/g, " ");
  seen.title = await page.title();
  await page.screenshot({ path: cfg.screenshot });
} catch (e) {
  seen.errors.push(String(e));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen) + "\n");
