/** What a page module is, and what the shell hands it. */

/** `GET /v1/me`. */
export interface Me {
  key_id: string;
  name: string | null;
  tenant_id: string;
  scopes: string[];
  sources: string[];
  /** Matched against an approval's `approvers` (absent from servers before approvals). */
  labels?: string[];
  /** Who the caller is as events record it (absent from servers before identity). */
  principal?: unknown;
}

/** What a page gets when it renders. */
export interface PageContext {
  me: Me;
  /** True when the key holds `scope` (or `admin`). */
  can(scope: string): boolean;
  /** Path parameters (`decisions/:id` → `{ id }`). */
  params: Record<string, string>;
  /** The hash route's query (`#/history?session=s1`). */
  query: URLSearchParams;
  /** Changes the route (`history?session=s1`). */
  navigate(hash: string): void;
  /** Aborted when the user leaves the page: stop streams and timers. */
  signal: AbortSignal;
  /** Asks the shell to refresh the header (the approvals count). */
  refreshHeader(): void;
}

/** One page of the console: one module each, listed in main.ts. */
export interface Page {
  /** Route pattern without `#/`: `history`, `decisions/:id`. */
  path: string;
  /** Document title and the heading. */
  title: string;
  /** In the navigation bar: its label and the route it links to. */
  nav?: { label: string; href: string };
  /** Shown only to keys with one of these scopes (any key when absent). */
  scopes?: string[];
  /**
   * A `/v1` path answered with 404 when this server does not have the feature yet: the page
   * (and its nav entry) stays hidden there.
   */
  probe?: string;
  render(root: HTMLElement, ctx: PageContext): Promise<void>;
}

/** A state item as `/v1/state/items` answers it. */
export interface StateItem {
  session_id: string;
  key: string;
  value: string;
  type: string;
  source: string;
  trust: number;
  version: number;
  status: string;
  /** `secret` items are shown masked (console/secretMask.ts). */
  sensitivity: string;
  updated_at: string;
}

/** A webhook as `/v1/webhooks` answers it. */
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  filter: { verdicts?: string[]; session_id?: string } | null;
  description: string | null;
  status: string;
  created_at: string;
  updated_at: string;
}

/** A delivery as `/v1/webhooks/{id}/deliveries` answers it. */
export interface Delivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}
