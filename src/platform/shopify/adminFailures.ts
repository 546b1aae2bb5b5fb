import { OutcomeUnknown, ServiceError } from '../../domain/errors.js';

/**
 * How a call to the platform's Admin API fails, as a caller meets it: 503 platform_unavailable (unreachable,
 * failing, throttling past the budget, an answer svc cannot use) or 403 app_not_installed (no token: the shop has not
 * installed, or uninstalled).
 */

export const platformUnavailable = (why: string, retryAfterSeconds = 5) =>
  new ServiceError('platform_unavailable', `The platform could not be reached or did not answer (${why}). Nothing was changed; try again shortly.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });

/** A mutation sent whose answer never came: it may have been carried out on the platform. */
export const mutationOutcomeUnknown = (why: string, retryAfterSeconds = 5) =>
  new OutcomeUnknown(`The platform did not answer the change (${why}): it may have been made there. Read the contract before sending it again.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });

export const notInstalled = () =>
  new ServiceError('app_not_installed', 'The shop has not installed the app, or has uninstalled it. Open the app from the shop admin to install it.');

/**
 * Thrown by a call made while carrying out a change (possibly inside a transaction) when the shop's token is not in
 * memory or was refused: nothing happened on the platform, and the caller refreshes outside and tries again.
 */
export class TokenNeeded extends Error {
  constructor(readonly stale?: string) {
    super('the platform access token must be loaded or refreshed first');
  }
}

/** An answer's body as JSON, or null when it is not JSON. */
export function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
