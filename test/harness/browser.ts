import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium (installed by .ci/run); WEIR_CHROMIUM overrides the path. */
export const CHROMIUM = process.env.WEIR_CHROMIUM ?? '/usr/bin/chromium';

/** A real headless Chromium. A machine without one fails the test with the fix; it never skips. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium; .ci/run does this) or set WEIR_CHROMIUM`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run'],
  });
}
