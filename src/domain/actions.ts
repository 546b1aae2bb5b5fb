import { z } from 'zod';
import { ServiceError, invalidInput, invalidRequest, issuesToDetails, type ErrorDetail } from './errors.js';
import { StoredText } from './text.js';
import { addYears, parseUtcTimestamp, UtcTimestamp } from './time.js';

const FutureTimestamp = (what: string) =>
  UtcTimestamp.describe(`${what}: ISO 8601 in UTC ending in Z, strictly in the future and at most 5 years ahead.`);

export const PauseAction = z
  .strictObject({
    action: z.literal('pause'),
    resumeAt: FutureTimestamp('When the contract resumes by itself').optional(),
  })
  .meta({ title: 'PauseAction', description: 'Pause; without resumeAt the contract stays paused until resumed.' });
export type PauseAction = z.infer<typeof PauseAction>;

export const ResumeAction = z
  .strictObject({ action: z.literal('resume') })
  .meta({ title: 'ResumeAction', description: 'Resume now; a past next billing date moves to the first one after now.' });
export type ResumeAction = z.infer<typeof ResumeAction>;

export const CancelAction = z
  .strictObject({
    action: z.literal('cancel'),
    reason: StoredText(500).optional().describe('Why the contract was cancelled, up to 500 characters.'),
  })
  .meta({ title: 'CancelAction', description: 'Cancel the contract. Final.' });
export type CancelAction = z.infer<typeof CancelAction>;

export const SkipAction = z
  .strictObject({ action: z.literal('skip') })
  .meta({ title: 'SkipAction', description: 'Skip the next order: the next billing date moves one interval forward.' });
export type SkipAction = z.infer<typeof SkipAction>;

export const RescheduleAction = z
  .strictObject({
    action: z.literal('reschedule'),
    nextBillingDate: FutureTimestamp('The new next billing date'),
  })
  .meta({ title: 'RescheduleAction', description: 'Set the next billing date.' });
export type RescheduleAction = z.infer<typeof RescheduleAction>;

export const ContractAction = z.discriminatedUnion('action', [
  PauseAction,
  ResumeAction,
  CancelAction,
  SkipAction,
  RescheduleAction,
]);
export type ContractAction = z.infer<typeof ContractAction>;

export const ACTION_NAMES = ['pause', 'resume', 'cancel', 'skip', 'reschedule'] as const;
const SCHEMAS = {
  pause: PauseAction,
  resume: ResumeAction,
  cancel: CancelAction,
  skip: SkipAction,
  reschedule: RescheduleAction,
} as const;

/**
 * Validates an action body: object shape, a known `action` (else unsupported_action listing them), only that
 * action's fields, and timestamps strictly in the future and at most 5 years ahead of `now`.
 */
export function parseContractAction(body: unknown, now: Date): ContractAction {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object with an "action" field.', [
      { path: '', message: 'expected a JSON object' },
    ]);
  }
  const name = (body as Record<string, unknown>).action;
  if (typeof name !== 'string') {
    throw invalidRequest('The "action" field is required and must be a string.', [
      { path: 'action', message: `required: one of ${ACTION_NAMES.join(', ')}` },
    ]);
  }
  if (!(ACTION_NAMES as readonly string[]).includes(name)) {
    throw new ServiceError(
      'unsupported_action',
      `Unsupported action "${name.slice(0, 40)}". Supported actions: ${ACTION_NAMES.join(', ')}.`,
    );
  }
  const parsed = SCHEMAS[name as keyof typeof SCHEMAS].safeParse(body);
  if (!parsed.success) {
    throw invalidInput(issuesToDetails(parsed.error.issues));
  }
  const action = parsed.data as ContractAction;
  const horizon = addYears(now, 5);
  const details: ErrorDetail[] = [];
  for (const field of ['resumeAt', 'nextBillingDate'] as const) {
    const value = (action as Record<string, unknown>)[field];
    if (typeof value !== 'string') continue;
    const at = parseUtcTimestamp(value)!;
    if (at.getTime() <= now.getTime()) details.push({ path: field, message: 'must be in the future' });
    else if (at.getTime() > horizon.getTime()) details.push({ path: field, message: 'must be at most 5 years ahead' });
  }
  if (details.length) throw invalidInput(details);
  return action;
}
