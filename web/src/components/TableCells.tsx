import { IndexTable, Text } from '@shopify/polaris';
import type { ReactNode } from 'react';
import { formatDateTime, formatDayAndTime } from '../format';

/**
 * The one cell of a row on a narrow screen (IndexTable's condensed list). Table cells do not wrap their text, so on a
 * phone a row of badges and dates ran past the screen's edge, cut off by the list; here the row's content wraps.
 */
export function CondensedCell({ children }: { children: ReactNode }) {
  return (
    <IndexTable.Cell>
      <div className="svc-wrap">{children}</div>
    </IndexTable.Cell>
  );
}

/**
 * A moment in a table: the day above, the time and its zone below, so a column of dates is half as wide and a
 * table of several fits the screen.
 */
export function DateTimeCell({ iso, empty = '—' }: { iso: string | null | undefined; empty?: string }) {
  return (
    <IndexTable.Cell>
      <DateTime iso={iso} empty={empty} />
    </IndexTable.Cell>
  );
}

/** The day above, the time and its zone below: DateTimeCell's content, for a cell that holds more. */
export function DateTime({ iso, empty = '—' }: { iso: string | null | undefined; empty?: string }) {
  if (!iso) return <>{empty}</>;
  const { day, time } = formatDayAndTime(iso);
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      <Text as="span">{day}</Text>
      <br />
      <Text as="span" variant="bodySm" tone="subdued">
        {time}
      </Text>
    </time>
  );
}

/** A cell whose text wraps within `maxWidth` instead of widening its column (an email, a list of products). */
export function WrappingCell({ children, maxWidth = '16rem' }: { children: ReactNode; maxWidth?: string }) {
  return (
    <IndexTable.Cell>
      <div className="svc-wrap" style={{ maxWidth }}>
        {children}
      </div>
    </IndexTable.Cell>
  );
}
