import type { WebhookAttempt, WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint } from '../api';

export const ALL_EVENTS = '*';

export const eventsSummary = (events: string[]) => (events.includes(ALL_EVENTS) ? 'All events' : events.join(', '));

/** Why an endpoint is disabled, said plainly: the merchant must know whether to fix the receiver or just enable it. */
export function disabledReasonText(e: WebhookEndpoint): { title: string; body: string } {
  switch (e.disabledReason) {
    case 'gone':
      return {
        title: 'Disabled: the receiver answered 410 Gone',
        body: 'Your server said this URL no longer accepts webhooks, so nothing is sent to it. Enable it again once the URL accepts deliveries.',
      };
    case 'failing':
      return {
        title: 'Disabled: every delivery failed for 5 days',
        body: 'Your server did not accept a delivery for 5 days in a row, so sending stopped. Fix the server, then enable the endpoint: you can then resend what failed meanwhile.',
      };
    case 'manual':
    case null:
      return {
        title: 'Disabled by hand',
        body: 'Someone disabled this endpoint. Nothing is sent to it, and no deliveries are queued for it, until it is enabled again.',
      };
  }
}

export const DELIVERY_STATUS: Record<WebhookDeliveryStatus, { label: string; tone?: 'success' | 'critical' | 'info' | 'attention' }> = {
  pending: { label: 'Pending', tone: 'attention' },
  delivering: { label: 'Delivering', tone: 'info' },
  succeeded: { label: 'Succeeded', tone: 'success' },
  failed: { label: 'Failed', tone: 'critical' },
};

/** The receiver's last answer: its HTTP status, or why there was none. */
export function lastAnswer(d: WebhookDelivery): string {
  const last = d.attemptLog[d.attemptLog.length - 1];
  if (!last) return d.status === 'pending' ? 'Not sent yet' : '—';
  return attemptAnswer(last);
}

export function attemptAnswer(a: WebhookAttempt): string {
  if (a.statusCode === null) return a.error ?? 'No answer';
  const status = `HTTP ${a.statusCode}`;
  return a.error && a.error !== status ? `${status} · ${a.error}` : status;
}

/**
 * Attempts made: a resend starts the delivery's count again, but its log keeps every earlier attempt, which is what
 * the merchant wants counted.
 */
export const attemptCount = (d: WebhookDelivery) => Math.max(d.attempts, d.attemptLog.length);

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
