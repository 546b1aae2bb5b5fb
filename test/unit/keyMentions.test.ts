import { describe, expect, it } from 'vitest';
import { mentionsKey, newRawKey, percentDecoded, scrubKeys } from '../../src/domain/keys.js';

/** A key is recognised however it is percent-encoded (README, Hostile clients), and scrubbed from any text that holds it. */

const key = newRawKey();
const rest = key.slice('svc_live_'.length);

describe('keys, percent-encoded', () => {
  it.each([
    `%73vc_live_${rest}`,
    `sv%63_live_${rest}`,
    `svc_%6Cive_${rest}`,
    `svc%255flive_${rest}`,
    `svc%5Flive%5F${rest}`,
    `%25%37%33vc_live_${rest}`,
    `SVC_LIVE_${rest}`,
  ])('%s is a mention of a key, and is scrubbed from a log line', (form) => {
    expect(mentionsKey(`/api/v1/subscription-contracts?k=${form}&limit=1`)).toBe(true);
    const line = JSON.stringify({ url: `/x?k=${form}`, msg: 'request' });
    const scrubbed = scrubKeys(line);
    expect(scrubbed).not.toContain(rest.slice(0, 8));
    expect(JSON.parse(scrubbed).msg).toBe('request');
  });

  it('decodes until nothing changes; text still changing after 8 rounds counts as a mention', () => {
    expect(percentDecoded('a%2541b')).toBe('aAb');
    expect(percentDecoded('%zz%2')).toBe('%zz%2');
    expect(percentDecoded('caf%C3%A9')).toBe('caf%C3%A9');
    const deep = `%${'25'.repeat(12)}41`;
    expect(percentDecoded(deep)).toBeNull();
    expect(mentionsKey(deep)).toBe(true);
  });

  it('leaves text without a key alone', () => {
    for (const text of ['/api/v1/subscription-contracts?cursor=abc%3D%3D', 'svc live', '{"url":"/x?q=%20%22"}']) {
      expect(mentionsKey(text)).toBe(false);
      expect(scrubKeys(text)).toBe(text);
    }
  });
});
