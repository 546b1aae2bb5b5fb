import { z } from 'zod';

/**
 * What a client reads when a value is refused, in plain words: "must be at most 100", "must be one of DAY, WEEK,
 * MONTH, YEAR", "must be a whole number", rather than a validator's own phrasing ("Too big: expected number to be
 * <=100"). Installed as zod's error map for every schema of the process (API bodies and queries, MCP tool arguments,
 * the admin API), so no surface can forget it; a message a schema gives itself ("must be a string of 1 to 19
 * digits") still wins.
 */

const KIND: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  bigint: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  date: 'a date',
  null: 'null',
};

const UNIT: Record<string, [string, string]> = {
  string: ['character', 'characters'],
  array: ['item', 'items'],
  set: ['item', 'items'],
  file: ['byte', 'bytes'],
};

const count = (n: number | bigint, origin: string) => {
  const unit = UNIT[origin];
  return unit ? `${n} ${Number(n) === 1 ? unit[0] : unit[1]}` : String(n);
};

const listOf = (values: readonly unknown[]) =>
  values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');

export function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      const kind = KIND[issue.expected] ?? `of type ${issue.expected}`;
      return `must be ${kind}`;
    }
    case 'too_big': {
      const origin = String(issue.origin);
      if (origin === 'string' || origin === 'array' || origin === 'set' || origin === 'file') {
        return `must have at most ${count(issue.inclusive ? issue.maximum : Number(issue.maximum) - 1, origin)}`;
      }
      return issue.inclusive ? `must be at most ${issue.maximum}` : `must be less than ${issue.maximum}`;
    }
    case 'too_small': {
      const origin = String(issue.origin);
      if (origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      if (origin === 'array' && Number(issue.minimum) === 1) return 'must have at least 1 item';
      if (origin === 'string' || origin === 'array' || origin === 'set' || origin === 'file') {
        return `must have at least ${count(issue.inclusive ? issue.minimum : Number(issue.minimum) + 1, origin)}`;
      }
      return issue.inclusive ? `must be at least ${issue.minimum}` : `must be more than ${issue.minimum}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${listOf(issue.values)}` : `must be one of ${listOf(issue.values)}`;
    case 'invalid_format':
      if (issue.format === 'email') return 'must be an email address';
      if (issue.format === 'url') return 'must be a URL';
      if (issue.format === 'datetime') return 'must be an ISO 8601 timestamp in UTC ending in Z';
      if (issue.format === 'uuid') return 'must be a UUID';
      return 'is not in the expected format';
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return issue.keys.length === 1 ? `unknown field "${issue.keys[0]}"` : `unknown fields ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    case 'invalid_union':
      return 'is not any of the accepted forms';
    case 'invalid_key':
      return 'has a key that is not accepted';
    case 'invalid_element':
      return 'has an element that is not accepted';
    case 'custom':
      return undefined;
    default:
      return undefined;
  }
}

z.config({ customError: plainMessage });
