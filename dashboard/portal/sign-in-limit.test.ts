/**
 * The sign-in limit's counting (docs/portal.md) with a clock the test moves: a window starts at
 * its first attempt and ends after `window_ms` whatever is tried meanwhile (a lock is bounded),
 * and an attacker's address locks an e-mail at that address only. Through real HTTP:
 * portal.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AttemptCounter, addressKey, SIGN_IN_LIMITS, SignInLimits } from './sign-in-limit.ts';

describe('sign-in limit', () => {
  test('a window starts at its first attempt and ends window_ms later, refused tries or not', () => {
    let now = 1_000_000;
    const c = new AttemptCounter(() => now, 60_000);
    for (let i = 0; i < 3; i++) {
      assert.equal(c.wait('k', 3), 0);
      c.hit('k');
      now += 1_000;
    }
    assert.equal(c.wait('k', 3), 57_000, 'locked until the first attempt is a window old');
    // Refused attempts are not counted, so the lock does not grow.
    for (let i = 0; i < 50; i++) {
      now += 1_000;
      if (c.wait('k', 3) === 0) c.hit('k');
    }
    assert.equal(now, 1_053_000);
    assert.equal(c.wait('k', 3), 7_000);
    now += 7_000;
    assert.equal(c.wait('k', 3), 0, 'a fresh window');
    c.hit('k');
    assert.equal(c.wait('k', 3), 0);
    c.clear('k');
    assert.equal(c.wait('k', 1), 0);
  });

  test("an attacker's address locks an e-mail there only; enough addresses lock it everywhere", () => {
    const now = 5_000;
    const l = new SignInLimits(() => now);
    for (let i = 0; i < SIGN_IN_LIMITS.email_and_address; i++) l.failed('victim', 'attacker');
    assert.equal(l.signInWait('victim', 'attacker'), SIGN_IN_LIMITS.window_ms);
    assert.equal(l.signInWait('victim', 'developer'), 0);
    assert.equal(l.signInWait('other', 'attacker'), 0);
    let a = 0;
    while (l.signInWait('victim', 'developer') === 0) {
      const from = `bot-${String(Math.floor(a / SIGN_IN_LIMITS.email_and_address))}`;
      if (l.signInWait('victim', from) === 0) l.failed('victim', from);
      a++;
    }
    assert.ok(a >= SIGN_IN_LIMITS.email - SIGN_IN_LIMITS.email_and_address);
    // Sign-ups count against the address.
    for (let i = 0; i < SIGN_IN_LIMITS.address; i++) l.signedUp(`e${String(i)}`, 'signups');
    assert.ok(l.signUpWait('new', 'signups') > 0);
    assert.ok(l.signInWait('new', 'signups') > 0);
    assert.equal(l.signUpWait('new', 'elsewhere'), 0);
  });

  const addresses: [string, string | undefined, string][] = [
    ['IPv4', '192.0.2.7', '192.0.2.7'],
    ['IPv4-mapped', '::ffff:192.0.2.7', '192.0.2.7'],
    ['IPv6 full', '2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['IPv6 same /64', '2001:0db8:0001:0002::9', '2001:db8:1:2::/64'],
    ['IPv6 loopback', '::1', '0:0:0:0::/64'],
    ['none', undefined, 'unknown'],
  ];
  for (const [name, address, key] of addresses) {
    test(`address key: ${name}`, () => {
      assert.equal(addressKey(address), key);
    });
  }
});
