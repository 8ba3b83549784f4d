/**
 * Headless Chromium for the web UI's tests: Debian's /usr/bin/chromium, driven by playwright-core,
 * and signing in through the UI's form as a user does.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** A suite's `skip` option: false where Chromium is installed, else the reason it is skipped. */
export const withoutChromium: false | string = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} missing (apt-get install chromium)`;

/** Starts headless Chromium. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** Opens `url` in `p` and signs in with the access key `key` through the sign-in form. */
export async function signIn(p: Page, url: string, key: string): Promise<void> {
  await p.goto(url);
  await p.fill('#key', key);
  await p.click('#sign-in button[type=submit]');
}
