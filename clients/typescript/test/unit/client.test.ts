import assert from "node:assert/strict";
import { test } from "node:test";

import { APIError, CustomerAPI, paginate } from "../../src/index.js";

type Call = { url: string; method: string; headers: Record<string, string>; body: string | undefined };

function fakeFetch(answers: Array<(c: Call) => Response>): { fetch: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const f = async (url: string | URL | Request, init?: globalThis.RequestInit): Promise<Response> => {
    const c: Call = { url: String(url), method: init?.method ?? "GET", headers: init?.headers as Record<string, string>, body: init?.body as string | undefined };
    calls.push(c);
    const next = answers.shift();
    assert.ok(next, `unexpected call ${c.method} ${c.url}`);
    return next(c);
  };
  return { fetch: f as typeof fetch, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

test("sends the key, fills path and query, retries a 429 after Retry-After", async () => {
  const { fetch, calls } = fakeFetch([
    () => json(429, { code: "RATE_LIMITED" }, { "retry-after": "0" }),
    () => json(201, { topicId: "topic_1", title: "Pricing" }),
    () => json(200, { items: [], hasMore: false, nextCursor: null, totalCount: 0 }),
  ]);
  const api = new CustomerAPI({ baseUrl: "http://api.test/", apiKey: "k1", fetch });
  const topic = await api.post("/v0/topics", { body: { title: "Pricing" } });
  assert.equal(topic.topicId, "topic_1");
  assert.equal(calls.length, 2);
  assert.equal(calls[1]?.headers["x-api-key"], "k1");
  assert.equal(calls[1]?.body, JSON.stringify({ title: "Pricing" }));
  await api.get("/v0/pages/{page_id}/audiences", { path: { page_id: "page_1" }, query: { limit: 2, cursor: "c/1" } });
  assert.equal(calls[2]?.url, "http://api.test/v0/pages/page_1/audiences?limit=2&cursor=c%2F1");
});

test("a 404 is an APIError with the envelope; a PATCH's 503 without Retry-After is not retried", async () => {
  const envelope = { type: "http://api.test/errors/not_found", title: "Not Found", status: 404, code: "NOT_FOUND", detail: "page not found", requestId: "req_1" };
  const { fetch, calls } = fakeFetch([() => json(404, envelope), () => json(503, { code: "SERVICE_UNAVAILABLE" })]);
  const api = new CustomerAPI({ baseUrl: "http://api.test", apiKey: "k", fetch });
  await assert.rejects(api.get("/v0/pages/{page_id}", { path: { page_id: "page_x" } }), (err: unknown) => {
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "NOT_FOUND");
    assert.equal(err.requestId, "req_1");
    assert.equal(err.type, envelope.type);
    return true;
  });
  await assert.rejects(api.patch("/v0/pages/{page_id}", { path: { page_id: "page_1" }, body: { title: "t" } }), (err: unknown) => err instanceof APIError && err.status === 503);
  assert.equal(calls.length, 2);
});

test("a Retry-After beyond the bound is not waited for", async () => {
  const { fetch, calls } = fakeFetch([() => json(503, {}, { "retry-after": "120" })]);
  const api = new CustomerAPI({ baseUrl: "http://api.test", apiKey: "k", fetch, maxWaitMs: 1000 });
  await assert.rejects(api.get("/v0/topics"), (err: unknown) => err instanceof APIError && err.status === 503);
  assert.equal(calls.length, 1);
});

test("paginate walks every page once", async () => {
  const pages: Record<string, { items: number[]; nextCursor: string | null }> = {
    "": { items: [1, 2], nextCursor: "b" },
    b: { items: [3, 4], nextCursor: "c" },
    c: { items: [5], nextCursor: null },
  };
  const got: number[] = [];
  for await (const n of paginate(async (cursor) => pages[cursor ?? ""]!)) got.push(n);
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
});

// Compile-time checks: tsc --strict refuses calls the document does not allow.
export function typeChecks(api: CustomerAPI): void {
  // @ts-expect-error an unknown path
  void api.get("/v0/nope");
  // @ts-expect-error a missing path parameter
  void api.get("/v0/pages/{page_id}", {});
  // @ts-expect-error a body field the document does not have
  void api.post("/v0/topics", { body: { title: "T", colour: "red" } });
  // @ts-expect-error POST is not an operation of this path
  void api.post("/v0/pages/{page_id}", { path: { page_id: "p" } });
}

test("a 401 tells its reason; other errors have none", async () => {
  const envelope = (details?: unknown) => ({
    type: "http://api.test/errors/unauthorized", title: "Unauthorized", status: 401, code: "UNAUTHORIZED",
    detail: "authentication is required", requestId: "req_1", ...(details ? { details } : {}),
  });
  const { fetch } = fakeFetch([
    () => json(401, envelope({ reason: "wrong_header", hint: "send your API key in the x-api-key header" })),
    () => json(401, envelope()),
    () => json(404, { code: "NOT_FOUND", detail: "page not found", requestId: "req_2", status: 404 }),
  ]);
  const api = new CustomerAPI({ baseUrl: "http://api.test/", apiKey: "k1", fetch });
  for (const want of ["wrong_header", undefined, undefined]) {
    await assert.rejects(api.get("/v0/topics"), (err: unknown) => {
      assert.ok(err instanceof APIError);
      assert.equal(err.unauthorizedReason, want);
      return true;
    });
  }
});

test("a POST carries one Idempotency-Key, resent with its retries, so its 503 is retried", async () => {
  const { fetch, calls } = fakeFetch([() => json(503, { code: "SERVICE_UNAVAILABLE" }), () => json(201, { topicId: "topic_1" })]);
  const api = new CustomerAPI({ baseUrl: "http://api.test", apiKey: "k", fetch, maxWaitMs: 5000 });
  const topic = await api.post("/v0/topics", { body: { title: "Pricing" } });
  assert.equal(topic.topicId, "topic_1");
  assert.equal(calls.length, 2);
  const key = calls[0]?.headers["idempotency-key"];
  assert.match(key ?? "", /^[0-9a-f-]{36}$/);
  assert.equal(calls[1]?.headers["idempotency-key"], key);
});

test("the answer's ETag is read with response; a 304 and a 412 are APIErrors with their status", async () => {
  const { fetch, calls } = fakeFetch([
    () => json(200, { topicId: "topic_1" }, { etag: '"v1"' }),
    () => new Response(null, { status: 304, headers: { etag: '"v1"' } }),
    () => json(412, { code: "PRECONDITION_FAILED", status: 412 }, { etag: '"v2"' }),
  ]);
  const api = new CustomerAPI({ baseUrl: "http://api.test", apiKey: "k", fetch });
  let etag: string | null = null;
  await api.get("/v0/topics/{topic_id}", { path: { topic_id: "topic_1" }, response: (r) => { etag = r.headers.get("etag"); } });
  assert.equal(etag, '"v1"');
  await assert.rejects(api.get("/v0/topics/{topic_id}", { path: { topic_id: "topic_1" }, headers: { "if-none-match": '"v1"' } }),
    (err: unknown) => err instanceof APIError && err.status === 304);
  assert.equal(calls[1]?.headers["if-none-match"], '"v1"');
  await assert.rejects(api.patch("/v0/topics/{topic_id}", { path: { topic_id: "topic_1" }, body: { title: "t" }, headers: { "if-match": '"v1"' } }),
    (err: unknown) => err instanceof APIError && err.status === 412 && err.code === "PRECONDITION_FAILED");
});
