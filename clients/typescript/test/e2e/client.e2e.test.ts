// Against the whole system (run by e2e/clients_test.go, TestTypeScriptClient, with
// CUSTOMER_API_BASE_URL, CUSTOMER_API_KEY and WEBHOOK_RECEIVER, the example receiver).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { createServer } from "node:net";
import { test } from "node:test";

import { APIError, CustomerAPI, paginate, type Schema } from "../../src/index.js";

const base = process.env.CUSTOMER_API_BASE_URL ?? "";
const key = process.env.CUSTOMER_API_KEY ?? "";
const receiver = process.env.WEBHOOK_RECEIVER ?? "";

test("the TypeScript client against the whole system", { skip: !base || !key || !receiver ? "set CUSTOMER_API_BASE_URL, CUSTOMER_API_KEY, WEBHOOK_RECEIVER" : false }, async (t) => {
  const api = new CustomerAPI({ baseUrl: base, apiKey: key });

  const page = await api.post("/v0/pages", { body: { name: "TS client e2e", title: "Pricing", pageType: "inbound" } });
  const audience = await api.post("/v0/pages/{page_id}/audiences", { path: { page_id: page.pageId }, body: {} });
  assert.equal(audience.pageId, page.pageId);

  const want = new Set([page.pageId]);
  for (let i = 0; i < 4; i++) want.add((await api.post("/v0/pages", { body: { name: `page ${i}`, title: "T", pageType: "inbound" } })).pageId);
  let fetches = 0;
  const seen = new Set<string>();
  for await (const p of paginate<Schema<"Page">>((cursor) => {
    fetches++;
    return api.get("/v0/pages", { query: { limit: 2, cursor } });
  })) {
    assert.ok(want.has(p.pageId) && !seen.has(p.pageId), `page ${p.pageId} not ours or seen twice`);
    seen.add(p.pageId);
  }
  assert.equal(seen.size, want.size);
  assert.equal(fetches, 3);

  await assert.rejects(api.get("/v0/pages/{page_id}", { path: { page_id: "page_01khjzeje5es8b04emc6f0p6ta" } }), (err: unknown) => {
    assert.ok(err instanceof APIError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.code, "NOT_FOUND");
    assert.ok(err.requestId.length > 0);
    assert.match(err.type, /\/errors\/not_found$/);
    return true;
  });

  await t.test("a test event verified by the example receiver", async () => {
    // The receiver listens where the system reaches it: E2E_RECEIVER_HOST when the
    // system runs elsewhere (a cluster), else 127.0.0.1.
    const host = process.env.E2E_RECEIVER_HOST || "127.0.0.1";
    const port = await freePort(host);
    const url = `http://${host}:${port}/webhook`;
    const sub = await api.post("/v0/webhook_subscriptions", { body: { url, events: ["form.submitted"] } });
    const lines: string[] = [];
    const proc = spawn(process.execPath, [receiver], { env: { ...process.env, WEBHOOK_SECRET: sub.signingSecret, ADDR: `${host}:${port}` }, stdio: ["ignore", "pipe", "inherit"] });
    proc.stdout.setEncoding("utf8").on("data", (s: string) => lines.push(...s.split("\n").filter(Boolean)));
    try {
      await waitFor(lines, "listening on");
      const sent = await api.post("/v0/webhook_subscriptions/{subscription_id}/test", { path: { subscription_id: sub.subscriptionId }, body: { eventType: "form.submitted" } });
      await waitFor(lines, `verified ${sent.eventId} form.submitted`);
      await eventually(async () => {
        const list = await api.get("/v0/webhook_subscriptions/{subscription_id}/deliveries", { path: { subscription_id: sub.subscriptionId } });
        return list.items.length === 1 && list.items[0]?.deliveryId === sent.deliveryId && list.items[0]?.status === "succeeded";
      });

      const body = JSON.stringify({ timestamp: "2026-03-05T16:32:10.221Z", eventId: "evt_01kjzdf9zdec1b0mjavxbds9rf", payload: { type: "form.submitted" } });
      const other = "whsec_c2VjcmV0LW9mLTMyLWJ5dGVzLWZvci10ZXN0aW5nIQ==";
      const cases: Array<[string, string, number, string]> = [
        ["tampered body", sub.signingSecret, Date.now(), body.replace("form.submitted", "form.enriched")],
        ["wrong secret", other, Date.now(), body],
        ["stale timestamp", sub.signingSecret, Date.now() - 6 * 60_000, body],
      ];
      for (const [name, secret, at, sent] of cases) {
        const res = await fetch(url, { method: "POST", headers: standardHeaders(secret, at, body), body: sent });
        assert.equal(res.status, 401, name);
      }
      await waitFor(lines, "refused: webhooks: no signature matches", 2);
      await waitFor(lines, "refused: webhooks: timestamp outside the tolerance");
    } finally {
      proc.kill();
    }
  });
});

function standardHeaders(secret: string, atMs: number, body: string): Record<string, string> {
  const id = "evt_01kjzdf9zdec1b0mjavxbds9rf";
  const ts = String(Math.floor(atMs / 1000));
  const sig = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(`${id}.${ts}.${body}`).digest("base64");
  return { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` };
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, host, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

async function eventually(cond: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}

function waitFor(lines: string[], prefix: string, count = 1): Promise<void> {
  return eventually(async () => lines.filter((l) => l.startsWith(prefix)).length >= count).catch(() => {
    throw new Error(`the receiver did not print ${JSON.stringify(prefix)} ${count}×; it printed:\n${lines.join("\n")}`);
  });
}
