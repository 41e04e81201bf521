// Drives the hub's page in headless Chromium, with the browser at $CHROMIUM:
//
//   node page.mjs BASE_URL              a mention, its answer live, a thread
//   node page.mjs BASE_URL --token T    a hub that wants a token: given once,
//                                       a paused thread resumed, a mention
//   node page.mjs BASE_URL --resumed    a thread whose delivery the hub
//                                       resumed after a restart: its mark
//
// Prints one JSON line of what it saw and exits 0, or prints what went wrong
// and exits 1. Every wait is on a condition of the page, with a time limit.
// PAGE_SCREENSHOT=FILE.png keeps a picture of the end.
import puppeteer from "puppeteer-core";

const [base, flag, token] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM;
if (!base || !executablePath || (flag && flag !== "--resumed" && (flag !== "--token" || !token))) {
  console.error("usage: CHROMIUM=/path/to/chromium node page.mjs BASE_URL [--token TOKEN | --resumed]");
  process.exit(2);
}
const LIMIT = 15_000;
// Whatever hangs, the run ends.
setTimeout(() => fail(new Error("the run took over 90 s")), 90_000).unref();

const seen = { console: [], errors: [] };
let browser;

async function fail(err) {
  console.error("page test failed:", err && err.stack ? err.stack : err);
  console.error("console:", JSON.stringify(seen.console));
  console.error("page errors:", JSON.stringify(seen.errors));
  try {
    const page = browser && (await browser.pages())[0];
    if (page) console.error("DOM:", (await page.content()).slice(0, 4000));
  } catch { /* the browser is gone */ }
  try { await browser?.close(); } catch { /* gone */ }
  process.exit(1);
}

/** The texts of the messages shown. */
const shown = (page) => page.$$eval(".message", (nodes) => nodes.map((n) => ({
  from: n.dataset.from, thread: n.dataset.thread || null, text: n.querySelector(".text").textContent,
})));

/** Waits for a message from `from` whose text is `text`. */
function message(page, from, text) {
  return page.waitForFunction(
    (from, text) => [...document.querySelectorAll(".message")]
      .some((n) => n.dataset.from === from && n.querySelector(".text").textContent === text),
    { timeout: LIMIT }, from, text);
}

async function post(page, text) {
  await page.click("#post-text");
  await page.type("#post-text", text);
  await page.click("#post-send");
}

try {
  browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage();
  page.on("console", (m) => seen.console.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => seen.errors.push(String(e)));
  page.on("requestfailed", (r) => {
    if (!r.url().includes("/hub/api/events")) seen.errors.push(`request failed: ${r.url()}`);
  });
  const result = {};
  const response = await page.goto(`${base}/hub`, { waitUntil: "domcontentloaded" });
  result.status = response.status();
  await (token ? withToken(page, result) : flag === "--resumed" ? resumed(page, result) : mention(page, result));
  result.notReloaded = await page.evaluate(() => window.__notReloaded === true);
  result.errors = seen.errors;
  if (process.env.PAGE_SCREENSHOT) await page.screenshot({ path: process.env.PAGE_SCREENSHOT });
  console.log(JSON.stringify(result));
  await browser.close();
  process.exit(0);
} catch (err) {
  await fail(err);
}

/** Channel general shown and its feed live. */
async function general(page) {
  await page.waitForSelector('.channel[data-channel="general"] button', { timeout: LIMIT });
  await page.click('.channel[data-channel="general"] button');
  await page.waitForSelector('body[data-channel="general"][data-thread=""][data-loaded]', { timeout: LIMIT });
  await page.waitForSelector('#status[data-state="live"]', { timeout: LIMIT });
  // A mark that a reload or navigation would wipe.
  await page.evaluate(() => { window.__notReloaded = true; });
}

async function mention(page, result) {
  await general(page);
  result.name = await page.$eval("#post-name", (n) => n.value);

  // A mention: the person's message, then alpha's answer, live.
  await post(page, "@alpha hello from the browser");
  await message(page, "operator", "@alpha hello from the browser");
  await message(page, "alpha", "alpha: alpha hello from the browser");
  result.mentionMarked = await page.$eval('.message[data-from="operator"] .mention', (n) => n.textContent);
  result.channel = await shown(page);

  // Text is text, never markup.
  const markup = '<img src=x onerror="window.__injected=1"><b>bold</b>';
  await post(page, markup);
  await message(page, "operator", markup);
  result.markupElements = await page.$$eval("#messages img, #messages b", (n) => n.length);
  result.injected = await page.evaluate(() => window.__injected === 1);

  // The thread: its participants listed; clicking it shows its messages,
  // and a message posted there goes into it.
  await page.waitForSelector(".thread .participants", { timeout: LIMIT });
  result.participants = await page.$eval(".thread .participants", (n) => n.textContent);
  result.thread = await page.$eval(".thread", (n) => n.dataset.thread);
  await page.click(".thread .title");
  await page.waitForSelector(`body[data-thread="${result.thread}"][data-loaded]`, { timeout: LIMIT });
  await page.waitForSelector('.message[data-from="beta"]', { timeout: LIMIT });
  await post(page, "one more thing to check");
  await message(page, "beta", "beta: one more thing to check");
  result.threadMessages = await shown(page);
}

async function withToken(page, result) {
  // The API answered 401: the page asks, once.
  await page.waitForSelector("#token-form:not([hidden])", { timeout: LIMIT });
  await page.type("#token-input", token);
  await page.click("#token-send");
  await general(page);
  result.tokenFormAfter = await page.$eval("#token-form", (n) => !n.hidden);
  // Opened again, the page has the token and asks nothing.
  await page.reload({ waitUntil: "domcontentloaded" });
  await general(page);
  result.tokenFormAfterReload = await page.$eval("#token-form", (n) => !n.hidden);

  // The paused thread, marked, resumed with its button.
  await page.waitForSelector('.thread[data-paused="true"] button.resume', { timeout: LIMIT });
  result.pausedMarked = await page.$eval('.thread[data-paused="true"] .paused-mark', (n) => n.textContent.trim());
  await page.click('.thread[data-paused="true"] button.resume');
  await page.waitForSelector('.thread[data-paused="false"]', { timeout: LIMIT });
  result.resumedThread = await page.$eval(".thread", (n) => n.dataset.thread);

  // A mention: the token says who writes.
  await post(page, "@alpha hello with a token");
  await message(page, "alpha", "alpha: alpha hello with a token");
  result.channel = await shown(page);
}

async function resumed(page, result) {
  await general(page);
  // The thread; its first message shows where its delivery stands.
  await page.waitForSelector(".thread .title", { timeout: LIMIT });
  result.thread = await page.$eval(".thread", (n) => n.dataset.thread);
  await page.click(".thread .title");
  await page.waitForSelector(`body[data-thread="${result.thread}"][data-loaded]`, { timeout: LIMIT });
  const mark = '.message .delivery[data-agent="beta"][data-state="resumed"]';
  await page.waitForSelector(mark, { timeout: LIMIT });
  result.resumedMark = await page.$eval(mark, (n) => ({
    text: n.textContent, attempt: n.dataset.attempt, from: n.closest(".message").dataset.from,
  }));
}
