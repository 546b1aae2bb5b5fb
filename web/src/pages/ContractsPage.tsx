import { BlockStack, Box, Button, Card, Icon, Page, SkeletonBodyText, Text, TextField } from '@shopify/polaris';
import { SearchIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type ContractFilter, type ContractPage } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { STATUS_LABEL } from '../format';
import { navigate, ROUTES, useLocation } from '../router';
import { BulkChangeBar } from './BulkChangeDialog';
import { ContractFilters, EMPTY_FILTERS, filterSummary, hasFilters, readFilters, toContractFilter, writeFilters, type FilterState } from './ContractFilters';
import { ContractsTable } from './ContractsTable';
import { ImportBanner, useImportProgress } from './ImportProgress';

const PAGE_SIZE = 25;
/** How long typing may pause before the list follows the search box. */
const TYPING_MS = 300;
/** The list's state lives in the address, so a contract's page leads back to the same search, filters and page. */
type ListState = { query: string; filters: FilterState; cursor: string; page: number };

function readState(search: URLSearchParams): ListState {
  return {
    query: search.get('query') ?? '',
    filters: readFilters(search),
    cursor: search.get('cursor') ?? '',
    page: Math.max(1, Number.parseInt(search.get('page') ?? '1', 10) || 1),
  };
}

export function contractsListUrl(s: ListState): string {
  const params = new URLSearchParams();
  if (s.query) params.set('query', s.query);
  writeFilters(s.filters, params);
  if (s.cursor) params.set('cursor', s.cursor);
  if (s.cursor && s.page > 1) params.set('page', String(s.page));
  const qs = params.toString();
  return qs ? `${ROUTES.contracts}?${qs}` : ROUTES.contracts;
}

/** Where a contract's page leads back to: the list as the merchant last saw it in this tab. */
export let lastContractsListUrl: string = ROUTES.contracts;

/**
 * The shop's contracts, newest first, found by contract number or the start of the customer's email and by status,
 * a page at a time; each row opens the contract's page. In platform mode the install's import is shown while it runs,
 * and the list follows it.
 */
export function ContractsPage() {
  const { api } = useAdminApi();
  const { search } = useLocation();
  const state = readState(search);
  const { query, filters, cursor, page } = state;
  // The filter as the API takes it, by value: the list reloads when it changes, not on every render.
  const filterKey = JSON.stringify(toContractFilter(filters));
  lastContractsListUrl = contractsListUrl(state);
  const [draft, setDraft] = useState(query);
  const [data, setData] = useState<ContractPage | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const request = useRef(0);

  const go = useCallback((next: Partial<ListState>, opts: { replace?: boolean } = {}) => {
    navigate(contractsListUrl({ ...readState(new URLSearchParams(window.location.search)), ...next }), opts);
  }, []);

  const load = useCallback(async () => {
    // Only the answer to the latest request is shown: a slow answer to an older search must not replace it.
    const mine = ++request.current;
    setLoading(true);
    setError(null);
    try {
      const filter = JSON.parse(filterKey) as ContractFilter;
      const res = await api.contracts({ query: query.trim() || undefined, ...filter, cursor: cursor || undefined, limit: PAGE_SIZE });
      if (mine === request.current) setData(res);
    } catch (err) {
      if (mine === request.current) setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      if (mine === request.current) setLoading(false);
    }
  }, [api, query, filterKey, cursor]);
  useEffect(() => {
    void load();
  }, [load]);

  // Each search starts at the newest contracts. The box follows the address only when it changed elsewhere (back
  // and forward): a search the box itself started must not overwrite what was typed since.
  const searched = useRef(query);
  const searchFor = useCallback((text: string) => {
    searched.current = text;
    go({ query: text, cursor: '', page: 1 }, { replace: true });
  }, [go]);
  useEffect(() => {
    if (query === searched.current) return;
    searched.current = query;
    setDraft(query);
  }, [query]);
  // Typing searches once it pauses.
  useEffect(() => {
    if (draft === searched.current) return;
    const timer = setTimeout(() => searchFor(draft), TYPING_MS);
    return () => clearTimeout(timer);
  }, [draft, searchFor]);

  const importState = useImportProgress();
  const [importNoticeDismissed, setImportNoticeDismissed] = useState(false);
  const progress = importState.progress;
  const importing = progress !== null && progress.status !== 'completed';
  // The effects below reload whatever the merchant is looking at (search, filter, page), without restarting on each change of it.
  const latest = useRef({ load, data, cursor });
  latest.current = { load, data, cursor };
  // Once the import completes, the list shows everything it brought in.
  useEffect(() => {
    if (importState.finishedHere) void latest.current.load();
  }, [importState.finishedHere]);
  // While it runs, a first page that is not full yet fills in as contracts arrive; a full page stays put.
  const imported = progress?.imported ?? 0;
  useEffect(() => {
    const { data: shown, cursor: at, load: reload } = latest.current;
    if (importing && imported > 0 && !at && shown && shown.contracts.length < PAGE_SIZE) void reload();
  }, [importing, imported]);

  const searching = Boolean(query.trim()) || hasFilters(filters);
  const pagination =
    data && (data.previousCursor || data.nextCursor)
      ? {
          hasPrevious: Boolean(data.previousCursor),
          onPrevious: () => go({ cursor: page <= 2 ? '' : data.previousCursor!, page: page - 1 }),
          hasNext: Boolean(data.nextCursor),
          onNext: () => go({ cursor: data.nextCursor!, page: page + 1 }),
          label: `Page ${page}`,
        }
      : undefined;

  return (
    <Page title="Contracts" subtitle="Subscription contracts of this store, newest first. Open one to see its history and change it.">
      <BlockStack gap="400">
        {!importNoticeDismissed && <ImportBanner state={importState} onDismiss={() => setImportNoticeDismissed(true)} />}
        <Card padding="0">
          <Box padding="400">
            <form
              role="search"
              aria-label="Find contracts"
              onSubmit={(e) => {
                e.preventDefault();
                searchFor(draft);
              }}
            >
              <BlockStack gap="300">
                <TextField
                  label="Search"
                  type="search"
                  placeholder="Contract number or customer email"
                  helpText="A contract number, or the start of the customer's email."
                  prefix={<Icon source={SearchIcon} />}
                  value={draft}
                  onChange={setDraft}
                  clearButton
                  onClearButtonClick={() => {
                    setDraft('');
                    searchFor('');
                  }}
                  autoComplete="off"
                  maxLength={254}
                />
                <ContractFilters value={filters} onChange={(f) => go({ filters: f, cursor: '', page: 1 }, { replace: true })} />
              </BlockStack>
            </form>
          </Box>
          <Box paddingInline="400" paddingBlockEnd="400">
            <BulkChangeBar
              filter={JSON.parse(filterKey) as ContractFilter}
              summary={filterSummary(filters)}
              blockedBy={query.trim() ? 'The search box narrows the list only: clear it to change contracts in bulk (for one customer, use Customer email).' : null}
              onChanged={load}
            />
          </Box>
          <Box paddingInline="400" paddingBlockEnd={error ? '400' : '0'}>
            <ErrorBanner error={error} title="The contracts could not be loaded" />
          </Box>
          {!data ? (
            loading && (
              <Box padding="400">
                <SkeletonBodyText lines={6} />
              </Box>
            )
          ) : data.contracts.length === 0 ? (
            <Box padding="400" borderBlockStartWidth="025" borderColor="border">
              <BlockStack gap="200" inlineAlign="center">
                <Text as="p" variant="headingSm">
                  {emptyTitle(state, importing)}
                </Text>
                <Text as="p" tone="subdued" alignment="center">
                  {query.trim()
                    ? 'Check the contract number, or search by the first letters of the customer’s email.'
                    : searching
                      ? 'Widen or clear the filters.'
                      : importing
                      ? 'Contracts appear here as the import brings them in from Shopify.'
                      : 'Contracts appear here when customers subscribe.'}
                </Text>
                {(searching || cursor) && (
                  <Button
                    onClick={() => {
                      setDraft('');
                      searched.current = '';
                      go({ query: '', filters: EMPTY_FILTERS, cursor: '', page: 1 });
                    }}
                  >
                    Show all contracts
                  </Button>
                )}
              </BlockStack>
            </Box>
          ) : (
            <div aria-busy={loading}>
              <ContractsTable contracts={data.contracts} pagination={pagination} />
            </div>
          )}
        </Card>
      </BlockStack>
    </Page>
  );
}

function emptyTitle(s: ListState, importing: boolean): string {
  const { statuses } = s.filters;
  const what = statuses.length === 1 ? `${STATUS_LABEL[statuses[0]].toLowerCase()} contracts` : 'contracts';
  const more = hasFilters({ ...s.filters, statuses: statuses.length === 1 ? [] : statuses });
  if (s.query.trim()) return `No ${what} match “${s.query.trim()}”${more ? ' and the filters' : ''}`;
  if (more) return `No ${what} match the filters`;
  if (statuses.length) return `No ${what}`;
  if (s.cursor) return 'No more contracts';
  return importing ? 'No contracts imported yet' : 'No contracts yet';
}
