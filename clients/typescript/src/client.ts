// The typed client over the generated types (schema.gen.ts, from api/openapi.yaml by
// openapi-typescript): one request function whose path, parameters, body and answer are
// checked against the document, plus what generators do badly: the x-api-key header,
// retries of 429 and 503 honouring Retry-After, typed errors carrying the envelope, and
// an iterator across nextCursor. Nothing but fetch at run time.
import type { components, paths } from "./schema.gen.js";

export type Method = "get" | "put" | "post" | "delete" | "patch";

/** The operation of a path and method. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The paths that have an operation for the method. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never;
}[keyof paths];

type PathPart<O> = O extends { parameters: { path: infer X } } ? ([X] extends [undefined] ? {} : { path: X }) : {};
type QueryPart<O> = O extends { parameters: { query?: infer Q } } ? ([Q] extends [undefined] ? {} : { query?: Q }) : {};
type BodyPart<O> = O extends { requestBody: { content: { "application/json": infer B } } }
  ? { body: B }
  : O extends { requestBody?: never }
    ? {}
    : O extends { requestBody?: { content: { "application/json": infer B } } }
      ? { body?: B }
      : {};

/** What a request of the operation takes: path parameters, query and JSON body. */
export type RequestInit<O> = PathPart<O> & QueryPart<O> & BodyPart<O> & {
  signal?: AbortSignal;
  /** Extra headers, e.g. `{"if-match": etag}` or `{"if-none-match": etag}`. */
  headers?: Record<string, string>;
  /** Called with the successful answer before its body is read: its headers (ETag). */
  response?: (res: Response) => void;
};

type Success = 200 | 201 | 202 | 204;
/** The JSON of the operation's successful answer (undefined for 204). */
export type Ok<O> = O extends { responses: infer R }
  ? { [S in keyof R]: S extends Success ? (R[S] extends { content: { "application/json": infer J } } ? J : undefined) : never }[keyof R]
  : never;

type InitArg<I> = {} extends I ? [init?: I] : [init: I];

export type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];
/** Why a 401 was answered: missing_key, wrong_header, malformed_key, unknown_key, conflicting_keys. */
export type UnauthorizedReason = components["schemas"]["UnauthorizedDetails"]["reason"];

/** An answer that is not 2xx, with the API's error envelope. */
export class APIError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string;
  /** Validation issues of a VALIDATION_ERROR, the limit's state of RATE_LIMITED. */
  readonly details: ErrorEnvelope["details"] | undefined;
  /** The raw body (when it was not an envelope, e.g. from a proxy in between). */
  readonly body: string;

  /** details.reason of a 401 (undefined for any other error, or a 401 without one). */
  get unauthorizedReason(): UnauthorizedReason | undefined {
    const d = this.details as { reason?: unknown } | undefined;
    return this.code === "UNAUTHORIZED" && d && typeof d === "object" && !Array.isArray(d) && typeof d.reason === "string"
      ? (d.reason as UnauthorizedReason)
      : undefined;
  }

  constructor(status: number, body: string, requestId: string | null) {
    let env: Partial<ErrorEnvelope> = {};
    try {
      env = JSON.parse(body) as Partial<ErrorEnvelope>;
    } catch {
      // not an envelope
    }
    super(env.code ? `${status} ${env.code}: ${env.detail ?? ""} (request ${env.requestId ?? requestId ?? "?"})` : `HTTP ${status}`);
    this.name = "APIError";
    this.status = status;
    this.code = env.code ?? "";
    this.type = env.type ?? "";
    this.title = env.title ?? "";
    this.detail = env.detail ?? "";
    this.requestId = env.requestId ?? requestId ?? "";
    this.details = env.details;
    this.body = body;
  }
}

export interface ClientOptions {
  /** e.g. http://127.0.0.1:25001 */
  baseUrl: string;
  apiKey: string;
  /** How often a 429 or 503 is retried (default 3; 0 turns retries off). */
  maxRetries?: number;
  /** The longest wait between tries in ms (default 30000); a longer Retry-After is an error. */
  maxWaitMs?: number;
  fetch?: typeof fetch;
}

const idempotent = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** How long Retry-After (seconds or an HTTP date) asks to wait; without it, backoff with jitter. */
export function retryAfterMs(header: string | null, attempt: number): number {
  if (header !== null && /^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  if (header) {
    const t = Date.parse(header);
    if (!Number.isNaN(t)) return Math.max(t - Date.now(), 0);
  }
  const base = 500 * 2 ** attempt;
  return base / 2 + Math.random() * (base / 2);
}

export class CustomerAPI {
  readonly #base: string;
  readonly #key: string;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #maxWaitMs: number;

  constructor(opts: ClientOptions) {
    this.#base = opts.baseUrl.replace(/\/+$/, "");
    this.#key = opts.apiKey;
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#maxRetries = opts.maxRetries ?? 3;
    this.#maxWaitMs = opts.maxWaitMs ?? 30_000;
  }

  get<P extends PathsWith<"get">>(path: P, ...init: InitArg<RequestInit<Operation<P, "get">>>): Promise<Ok<Operation<P, "get">>> {
    return this.request("GET", path, init[0] as Init);
  }
  post<P extends PathsWith<"post">>(path: P, ...init: InitArg<RequestInit<Operation<P, "post">>>): Promise<Ok<Operation<P, "post">>> {
    return this.request("POST", path, init[0] as Init);
  }
  patch<P extends PathsWith<"patch">>(path: P, ...init: InitArg<RequestInit<Operation<P, "patch">>>): Promise<Ok<Operation<P, "patch">>> {
    return this.request("PATCH", path, init[0] as Init);
  }
  put<P extends PathsWith<"put">>(path: P, ...init: InitArg<RequestInit<Operation<P, "put">>>): Promise<Ok<Operation<P, "put">>> {
    return this.request("PUT", path, init[0] as Init);
  }
  delete<P extends PathsWith<"delete">>(path: P, ...init: InitArg<RequestInit<Operation<P, "delete">>>): Promise<Ok<Operation<P, "delete">>> {
    return this.request("DELETE", path, init[0] as Init);
  }

  async request<T>(method: string, path: string, init: Init = {}): Promise<T> {
    let url = this.#base + path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const v = init.path?.[name];
      if (v === undefined) throw new TypeError(`missing path parameter ${name}`);
      return encodeURIComponent(String(v));
    });
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(init.query ?? {})) {
      if (v === undefined || v === null) continue;
      for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
    }
    if ([...q].length > 0) url += "?" + q.toString();
    const headers: Record<string, string> = { accept: "application/json", ...init.headers, "x-api-key": this.#key };
    // A POST gets an Idempotency-Key (unless the caller gave one), so that its retries,
    // ours or the caller's with the same key, cannot run it twice.
    if (method === "POST" && !Object.keys(headers).some((h) => h.toLowerCase() === "idempotency-key")) {
      headers["idempotency-key"] = crypto.randomUUID();
    }
    const keyed = Object.keys(headers).some((h) => h.toLowerCase() === "idempotency-key");
    let body: string | undefined;
    if (init.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(init.body);
    }
    for (let attempt = 0; ; attempt++) {
      const res = await this.#fetch(url, { method, headers, body, signal: init.signal });
      if (res.ok) {
        init.response?.(res);
        const text = await res.text();
        return (text === "" ? undefined : JSON.parse(text)) as T;
      }
      const retryable = res.status === 429 || (res.status === 503 && (idempotent.has(method) || keyed || res.headers.has("retry-after")));
      if (attempt < this.#maxRetries && retryable) {
        const wait = retryAfterMs(res.headers.get("retry-after"), attempt);
        if (wait <= this.#maxWaitMs) {
          await res.body?.cancel();
          await sleep(wait, init.signal);
          continue;
        }
      }
      throw new APIError(res.status, await res.text(), res.headers.get("x-request-id"));
    }
  }
}

interface Init {
  path?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  response?: (res: Response) => void;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });
}

/** One page of a list, as every list of the API returns it. */
export interface ListPage<T> {
  items: T[];
  nextCursor?: string | null;
}

/**
 * Walks a list across nextCursor, yielding each item once.
 *
 *     for await (const page of paginate((cursor) => api.get("/v0/pages", { query: { cursor } }))) { … }
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<ListPage<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (!page.nextCursor) return;
    cursor = page.nextCursor;
  }
}
