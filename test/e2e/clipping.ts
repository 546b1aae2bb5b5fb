/// <reference lib="dom" />
// (the check runs in the browser through page.evaluate, so it is typed against the DOM)
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

/** A table cell the merchant cannot see whole, and what hides it. */
export type ClippedCell = { table: string; cell: string; by: string; cellBox: [number, number]; visible: [number, number] };

/**
 * Every header and body cell of every table on the page, checked horizontally: a cell must lie inside the viewport,
 * or inside an ancestor that scrolls sideways (overflow-x auto or scroll, with more content than room), and no
 * ancestor with overflow-x hidden or clip may cut it. A scrolling ancestor is then held to the same rule, so a
 * scrolling box that is itself cut off does not count. Only the width is checked: pages scroll down, never sideways.
 * With `scrolling: false` a scrolling box does not count either: every cell must be in sight as the page opens (a
 * column scrolled out of sight behind a scroll bar the merchant may not notice).
 */
export async function clippedTableCells(page: Page, opts: { scrolling?: boolean } = {}): Promise<{ tables: number; cells: number; clipped: ClippedCell[] }> {
  return page.evaluate((allowScrolling) => {
    const SLACK = 1; // sub-pixel rounding of borders
    const describe = (el: Element) => {
      const cls = typeof el.className === 'string' ? el.className.split(/\s+/).filter(Boolean).slice(0, 2).join('.') : '';
      return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${cls ? `.${cls}` : ''}`;
    };
    const shown = (el: Element) => {
      const r = el.getBoundingClientRect();
      const cs = getComputedStyle(el);
      return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden';
    };
    // Header and body cells: a table's, and those of a table Polaris draws as a list on a narrow screen (IndexTable's
    // condensed rows are <li> holding <td>).
    const allCells = Array.from(document.querySelectorAll('th, td')).filter(shown);
    const tables = new Set<Element>();
    const clipped: ClippedCell[] = [];
    // What must be seen of a cell: the cell, and whatever in it shows text or can be used (a badge, a button).
    const content = (cell: Element) =>
      [cell, ...Array.from(cell.querySelectorAll('*'))].filter(
        (el) =>
          shown(el) &&
          el.getBoundingClientRect().width > SLACK &&
          (el === cell || el.matches('button, a, input, select, textarea, [role="button"]') || Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim() !== '')),
      );
    for (const cell of allCells) {
      const table = cell.closest('table, ul, ol, [role="table"], [role="grid"]') ?? cell.parentElement!;
      tables.add(table);
      const name = table.getAttribute('aria-label') ?? table.closest('[aria-label]')?.getAttribute('aria-label') ?? describe(table);
      for (const target of content(cell)) {
        const box = target.getBoundingClientRect();
        // The horizontal span that has to be seen: the element's, then (once inside a scrolling box) that box's.
        let left = box.left;
        let right = box.right;
        let cutBy: string | null = null;
        let visible: [number, number] = [0, 0];
        for (let el = target.parentElement; el && el !== document.documentElement; el = el.parentElement) {
          const overflow = getComputedStyle(el).overflowX;
          if (overflow === 'visible') continue;
          const r = el.getBoundingClientRect();
          const inner: [number, number] = [r.left + el.clientLeft, r.left + el.clientLeft + el.clientWidth];
          const scrolls = allowScrolling && (overflow === 'auto' || overflow === 'scroll') && el.scrollWidth > el.clientWidth + SLACK;
          if (scrolls) {
            // Reachable by scrolling this box; what must be seen from here on is the box itself.
            left = r.left;
            right = r.right;
            continue;
          }
          if (left < inner[0] - SLACK || right > inner[1] + SLACK) {
            cutBy = describe(el);
            visible = inner;
            break;
          }
        }
        const viewport: [number, number] = [0, document.documentElement.clientWidth];
        if (!cutBy && (left < viewport[0] - SLACK || right > viewport[1] + SLACK)) {
          cutBy = 'the viewport';
          visible = viewport;
        }
        if (cutBy) {
          const text = (target.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 40) || `(${describe(target)})`;
          clipped.push({ table: name, cell: text, by: cutBy, cellBox: [Math.round(box.left), Math.round(box.right)], visible: visible.map(Math.round) as [number, number] });
          break; // one finding per cell: what is inside a cut-off element is cut off too
        }
      }
    }
    const cells = allCells.length;
    return { tables: tables.size, cells, clipped };
  }, opts.scrolling ?? true);
}

/**
 * Fails when a table on the page has a cell nobody can see whole (clippedTableCells), naming each, or when the page
 * has fewer tables than expected (a check of no table proves nothing).
 */
export async function expectNoClippedTables(page: Page, opts: { tables?: number; where?: string; scrolling?: boolean } = {}): Promise<void> {
  const { tables, cells, clipped } = await clippedTableCells(page, opts);
  const where = opts.where ?? page.url();
  expect(tables, `tables on ${where}`).toBeGreaterThanOrEqual(opts.tables ?? 1);
  expect(cells, `cells on ${where}`).toBeGreaterThan(0);
  expect(clipped, `cells cut off on ${where} (${page.viewportSize()?.width} px wide)`).toEqual([]);
}
