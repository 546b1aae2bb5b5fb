import { BlockStack, Button, Card, InlineStack, Modal, Text, TextField } from '@shopify/polaris';
import { useRef, useState } from 'react';
import { ApiError, type ActionName, type ContractAction, type ContractDetail, type ContractView } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDate, formatDateTime, formatShortDateTime, STATUS_LABEL } from '../format';
import { formatMoney } from '../money';

type Props = {
  contract: ContractView;
  /** The actions the contract's status allows, as the server said. */
  allowed: ActionName[];
  /** When the contract last billed, as the server said (null: never). */
  lastBilled: ContractDetail['lastBilled'];
  /** What resuming would do to billing, as the server said (null: resume is not allowed). */
  resume: ContractDetail['resume'];
  /** The action succeeded: say so, and show the contract as it is now. */
  onDone: (message: string) => Promise<void>;
  /** The action failed: the contract may have changed meanwhile (another tab, the API), so read it again. */
  onStale: () => Promise<void>;
};
type Dialog = 'pause' | 'resume' | 'reschedule' | 'cancel' | 'bill_now' | null;

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

// The date fields speak the merchant's calendar (the browser's time zone); the API takes UTC instants.
const pad = (n: number) => String(n).padStart(2, '0');
const toDateField = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
/** A date field's day at the time of day of `at` (local), or at its start: the instant the API is sent. */
function fromDateField(value: string, at?: Date): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), at?.getHours() ?? 0, at?.getMinutes() ?? 0, at?.getSeconds() ?? 0);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
const inDays = (days: number) => {
  const d = new Date();
  d.setDate(d.getDate() + days);
  return d;
};
const oneInterval = (interval: string, count: number) => `${count === 1 ? 'one' : count} ${interval.toLowerCase()}${count === 1 ? '' : 's'}`;
const FIELD_LABEL: Record<string, string> = { resumeAt: 'The resume date', nextBillingDate: 'The next billing date', reason: 'The reason' };
/** A bill_now within this long of the last billing asks again (the server refuses one after a bill_now without it). */
const RECENT_MS = 24 * 3_600_000;

/** The server's refusal in the merchant's words: a field's problem names the field as the form labels it. */
function plainError(err: ApiError): ApiError {
  // Billed meanwhile (another tab, the API): the page reads the contract again, and Bill now then asks to bill again.
  if (err.code === 'recently_billed') {
    return new ApiError(err.status, err.code, 'It was billed less than 24 hours ago. To charge the customer a second time, choose Bill now again and confirm.', err.requestId);
  }
  const d = err.details[0];
  if (err.code !== 'invalid_request' || !d || !FIELD_LABEL[d.path]) return err;
  return new ApiError(err.status, err.code, `${FIELD_LABEL[d.path]} ${d.message}.`, err.requestId, err.details);
}

/**
 * What the merchant can do to the contract now: only the actions its status allows are offered. Pause takes an
 * optional resume date, reschedule a new date, cancel an optional reason and a confirmation (it is final); resume
 * and bill now are confirmed, saying when the customer is charged; skip acts at once. Bill now says when the contract
 * last billed, and within 24 hours of that asks whether to bill again (docs/renewals.md).
 */
export function ContractActions({ contract: c, allowed, lastBilled, resume, onDone, onStale }: Props) {
  const { api } = useAdminApi();
  const [dialog, setDialog] = useState<Dialog>(null);
  const [busy, setBusy] = useState<ActionName | null>(null);
  const [error, setError] = useState<{ title: string; err: ApiError } | null>(null);
  const [dialogError, setDialogError] = useState<ApiError | null>(null);
  const [resumeOn, setResumeOn] = useState('');
  const [billOn, setBillOn] = useState('');
  const [reason, setReason] = useState('');
  const activator = useRef<HTMLDivElement>(null);
  const can = (a: ActionName) => allowed.includes(a);

  const open = (d: Exclude<Dialog, null>) => {
    setDialogError(null);
    setError(null);
    if (d === 'pause') setResumeOn(c.resumeAt ? toDateField(new Date(c.resumeAt)) : '');
    if (d === 'reschedule') setBillOn(toDateField(new Date(c.nextBillingDate)));
    if (d === 'cancel') setReason('');
    setDialog(d);
  };

  const run = async (action: ContractAction, done: string, failed: string, inDialog: boolean) => {
    setBusy(action.action);
    setError(null);
    setDialogError(null);
    try {
      await api.act(c.id, action);
      setDialog(null);
      await onDone(done);
    } catch (err) {
      const e = plainError(asApiError(err));
      if (inDialog && e.code === 'invalid_request') setDialogError(e);
      else {
        setDialog(null);
        setError({ title: failed, err: e });
        await onStale();
      }
    } finally {
      setBusy(null);
    }
  };

  const pause = () => {
    const resumeAt = resumeOn ? fromDateField(resumeOn) : null;
    if (resumeOn && !resumeAt) return setDialogError(new ApiError(0, 'invalid_request', 'Enter the resume date as a day of the calendar.', null));
    void run({ action: 'pause', ...(resumeAt ? { resumeAt } : {}) }, c.status === 'PAUSED' ? 'Pause updated' : 'Contract paused', 'The contract was not paused', true);
  };
  const reschedule = () => {
    const nextBillingDate = fromDateField(billOn, new Date(c.nextBillingDate));
    if (!nextBillingDate) return setDialogError(new ApiError(0, 'invalid_request', 'Choose the new next billing date.', null));
    void run({ action: 'reschedule', nextBillingDate }, 'Next billing date changed', 'The next billing date was not changed', true);
  };
  const cancel = () => void run({ action: 'cancel', ...(reason.trim() ? { reason: reason.trim() } : {}) }, 'Contract cancelled', 'The contract was not cancelled', true);
  // Billed less than 24 hours ago: the merchant confirms billing again, and the request says so.
  const billedRecently = lastBilled !== null && Date.now() - Date.parse(lastBilled.at) < RECENT_MS;
  const billNow = () => void run({ action: 'bill_now', ...(billedRecently ? { again: true } : {}) }, 'Billing attempt made', 'The contract was not billed', false);
  const total = c.totals ? ` ${formatMoney(c.totals.total, c.totals.currencyCode)}` : '';
  const every = oneInterval(c.billingPolicy.interval, c.billingPolicy.intervalCount);
  const unpaidCycle = c.billing?.lastAttempt?.cycleDate;

  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Actions
        </Text>
        {error && <ErrorBanner error={error.err} title={error.title} onDismiss={() => setError(null)} takeFocus />}
        {allowed.length === 0 ? (
          <Text as="p" tone="subdued">
            A {STATUS_LABEL[c.status].toLowerCase()} contract cannot be changed.
          </Text>
        ) : (
          <div ref={activator} role="group" aria-label="Contract actions">
            <InlineStack gap="200">
              {can('pause') && (
                <Button onClick={() => open('pause')} disabled={busy !== null}>
                  {c.status === 'PAUSED' ? 'Change pause' : 'Pause'}
                </Button>
              )}
              {can('resume') && (
                <Button variant="primary" onClick={() => open('resume')} disabled={busy !== null}>
                  Resume
                </Button>
              )}
              {can('skip') && (
                <Button
                  loading={busy === 'skip'}
                  disabled={busy !== null}
                  onClick={() => void run({ action: 'skip' }, 'Next order skipped', 'The next order was not skipped', false)}
                >
                  Skip next order
                </Button>
              )}
              {can('bill_now') && (
                <Button onClick={() => open('bill_now')} disabled={busy !== null}>
                  {lastBilled ? `Bill now · last billed ${formatShortDateTime(lastBilled.at)}` : 'Bill now'}
                </Button>
              )}
              {can('reschedule') && (
                <Button onClick={() => open('reschedule')} disabled={busy !== null}>
                  Reschedule
                </Button>
              )}
              {can('cancel') && (
                <Button tone="critical" variant="secondary" onClick={() => open('cancel')} disabled={busy !== null}>
                  Cancel contract
                </Button>
              )}
            </InlineStack>
          </div>
        )}
      </BlockStack>

      <Modal
        open={dialog === 'pause'}
        activator={activator}
        onClose={() => setDialog(null)}
        title={c.status === 'PAUSED' ? `Change the pause of contract #${c.id}` : `Pause contract #${c.id}`}
        primaryAction={{ content: c.status === 'PAUSED' ? 'Update pause' : 'Pause contract', onAction: pause, loading: busy === 'pause' }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setDialog(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="300">
            <ErrorBanner error={dialogError} title="The contract was not paused" takeFocus />
            <Text as="p">A paused contract is not billed. It resumes on the resume date, or when you resume it.</Text>
            <TextField
              label="Resume date (optional)"
              type="date"
              value={resumeOn}
              onChange={setResumeOn}
              min={toDateField(inDays(1))}
              max={toDateField(inDays(5 * 365))}
              helpText="Leave it empty to keep the contract paused until you resume it."
              autoComplete="off"
            />
          </BlockStack>
        </Modal.Section>
      </Modal>

      <Modal
        open={dialog === 'reschedule'}
        activator={activator}
        onClose={() => setDialog(null)}
        title={`Reschedule contract #${c.id}`}
        primaryAction={{ content: 'Change date', onAction: reschedule, loading: busy === 'reschedule' }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setDialog(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="300">
            <ErrorBanner error={dialogError} title="The next billing date was not changed" takeFocus />
            <Text as="p">Now billed on {formatDateTime(c.nextBillingDate)}. The contract is billed on the new day at the same time.</Text>
            <TextField
              label="New next billing date"
              type="date"
              value={billOn}
              onChange={setBillOn}
              min={toDateField(new Date())}
              max={toDateField(inDays(5 * 365))}
              autoComplete="off"
            />
          </BlockStack>
        </Modal.Section>
      </Modal>

      <Modal
        open={dialog === 'resume'}
        activator={activator}
        onClose={() => setDialog(null)}
        title={`Resume contract #${c.id}?`}
        primaryAction={{
          content: resume?.billsNow ? 'Resume and bill now' : 'Resume contract',
          onAction: () => void run({ action: 'resume' }, 'Contract resumed', 'The contract was not resumed', false),
          loading: busy === 'resume',
        }}
        secondaryActions={[{ content: 'Not now', onAction: () => setDialog(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="200">
            {resume?.billsNow ? (
              <>
                <Text as="p" fontWeight="semibold">
                  Resuming bills now ({formatDate(resume.nextBillingDate)}).
                </Text>
                <Text as="p">
                  {c.customer.email} is charged{total} at once for the unpaid order{unpaidCycle ? ` due ${formatDateTime(unpaidCycle)}` : ''}, not on a later date.
                </Text>
                <Text as="p" tone="subdued">
                  Once it is paid, the schedule restarts from the payment: the next billing date becomes {every} after it.
                </Text>
              </>
            ) : resume ? (
              <Text as="p">
                The contract becomes active and is next billed on {formatDateTime(resume.nextBillingDate)}: {c.customer.email} is charged{total} then.
                {resume.nextBillingDate !== c.nextBillingDate ? ' Billing dates that passed while it was not active are not billed.' : ''}
              </Text>
            ) : (
              <Text as="p">The contract becomes active and is billed on its next billing date.</Text>
            )}
          </BlockStack>
        </Modal.Section>
      </Modal>

      <Modal
        open={dialog === 'bill_now'}
        activator={activator}
        onClose={() => setDialog(null)}
        title={billedRecently ? `Bill contract #${c.id} again?` : `Bill contract #${c.id} now?`}
        primaryAction={{ content: billedRecently ? 'Bill again' : 'Bill now', onAction: billNow, loading: busy === 'bill_now', destructive: billedRecently }}
        secondaryActions={[{ content: 'Not now', onAction: () => setDialog(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="200">
            {lastBilled && (
              <Text as="p" fontWeight={billedRecently ? 'semibold' : undefined}>
                {billedRecently ? 'Already billed less than 24 hours ago: ' : 'Last billed '}
                {formatDateTime(lastBilled.at)}
                {lastBilled.orderName ? ` (order ${lastBilled.orderName})` : ''}.
              </Text>
            )}
            <Text as="p">
              {c.customer.email} is charged{total} now for the current order{billedRecently ? ', a second time' : ''}.
            </Text>
            <Text as="p" tone="subdued">
              The schedule restarts from now: the next billing date becomes {every} from now. The payment's outcome appears under Billing attempts.
            </Text>
          </BlockStack>
        </Modal.Section>
      </Modal>

      <Modal
        open={dialog === 'cancel'}
        activator={activator}
        onClose={() => setDialog(null)}
        title={`Cancel contract #${c.id}?`}
        primaryAction={{ content: 'Cancel contract', destructive: true, onAction: cancel, loading: busy === 'cancel' }}
        secondaryActions={[{ content: 'Keep contract', onAction: () => setDialog(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="300">
            <ErrorBanner error={dialogError} title="The contract was not cancelled" takeFocus />
            <Text as="p">
              {c.customer.email} is not billed again. Cancelling is final: a cancelled contract cannot be resumed.
            </Text>
            <TextField
              label="Reason (optional)"
              value={reason}
              onChange={setReason}
              multiline={3}
              maxLength={500}
              showCharacterCount
              helpText="Kept with the contract and sent with its contract.cancelled webhook."
              autoComplete="off"
            />
          </BlockStack>
        </Modal.Section>
      </Modal>
    </Card>
  );
}
