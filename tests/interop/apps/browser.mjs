// Drives headless Chromium (puppeteer-core, Debian's `chromium`) to the test host page and waits
// until the app has shown the tool's result and said so (tests/interop/apps.sh). Prints what the
// app said and saves a screenshot; exits 1 on an error or after 60 s.
//   MCP_INTEROP_NODE_MODULES=... node browser.mjs CHROMIUM HOST_URL SCREENSHOT.png
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [chromium, url, screenshot] = process.argv.slice(2);
const modules = process.env.MCP_INTEROP_NODE_MODULES;
const puppeteer = (await import(pathToFileURL(join(modules, 'puppeteer-core/lib/esm/puppeteer/puppeteer-core.js')).href))
  .default;

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (message) => logs.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => logs.push(`pageerror: ${error.message}`));
  await page.setViewport({ width: 640, height: 480 });
  await page.goto(url);
  try {
    await page.waitForFunction(
      () => {
        const status = document.getElementById('status').textContent;
        return status === 'done' || status.startsWith('error');
      },
      { timeout: 60_000 },
    );
  } finally {
    await page.screenshot({ path: screenshot });
  }
  const status = await page.$eval('#status', (e) => e.textContent);
  const said = await page.$eval('#app-says', (e) => e.textContent);
  if (status !== 'done') {
    console.error(`host: ${status}\n${logs.filter((l) => !l.includes(' message [object')).join('\n')}`);
    process.exit(1);
  }
  console.log(said);
} finally {
  await browser.close();
}
