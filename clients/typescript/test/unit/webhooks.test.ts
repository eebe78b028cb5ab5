import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";

import { VerificationError, Verifier } from "../../src/webhooks.js";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const oldSecret = "whsec_c2VjcmV0LW9mLTMyLWJ5dGVzLWZvci10ZXN0aW5nIQ==";
const body = JSON.stringify({ timestamp: "2026-03-05T16:32:10.221Z", eventId: "evt_01kjzdf9zdec1b0mjavxbds9rf", payload: { type: "form.submitted" } });

// sign builds the headers the webhooks service sends, by the document's definition.
function sign(atMs: number, payload: string, ...secrets: string[]): Record<string, string> {
  const id = "evt_01kjzdf9zdec1b0mjavxbds9rf";
  const ts = String(Math.floor(atMs / 1000));
  const sigs = secrets.map((s) => "v1," + createHmac("sha256", Buffer.from(s.slice(6), "base64")).update(`${id}.${ts}.${payload}`).digest("base64"));
  return {
    "webhook-id": id,
    "webhook-timestamp": ts,
    "webhook-signature": sigs.join(" "),
    "x-webhook-timestamp": String(atMs),
    "x-webhook-signature-256": "sha256=" + createHmac("sha256", secrets[0]!).update(payload).digest("hex"),
  };
}

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof VerificationError, String(err));
    return err.reason;
  }
  return "verified";
}

async function reason256(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof VerificationError, String(err));
    return err.reason;
  }
  return "verified";
}

test("verifies good deliveries and refuses tampered, foreign and stale ones", async () => {
  const v = new Verifier(secret);
  const h = sign(Date.now(), body, secret);
  assert.deepEqual(v.verify(body, h), JSON.parse(body));
  assert.deepEqual(v.verify(Buffer.from(body), new Headers(h)), JSON.parse(body));
  assert.deepEqual(await v.verifySignature256(body, h), JSON.parse(body));
  const tampered = body.replace("form.submitted", "form.enriched");
  const cases: Array<[string, string, Record<string, string>, string]> = [
    ["tampered body", tampered, h, "bad_signature"],
    ["wrong secret", body, sign(Date.now(), body, oldSecret), "bad_signature"],
    ["stale", body, sign(Date.now() - 6 * 60_000, body, secret), "stale"],
    ["future", body, sign(Date.now() + 6 * 60_000, body, secret), "stale"],
    ["no headers", body, {}, "missing_headers"],
  ];
  for (const [name, b, headers, want] of cases) {
    assert.equal(reason(() => v.verify(b, headers)), want, name);
    assert.equal(await reason256(v.verifySignature256(b, headers)), want, name + " (X-Webhook-Signature-256)");
  }
  // The spec's header does not sign its timestamp: a replay with a fresh one passes it,
  // which is why verify() never falls back to it.
  const replay = { ...sign(Date.now() - 3_600_000, body, secret), "x-webhook-timestamp": String(Date.now()) };
  assert.equal(await reason256(v.verifySignature256(body, replay)), "verified");
  assert.equal(reason(() => v.verify(body, { ...replay, "webhook-signature": "" })), "missing_headers");
});

test("accepts either secret during a rotation", async () => {
  const both = new Verifier(secret, oldSecret);
  for (const h of [sign(Date.now(), body, secret), sign(Date.now(), body, oldSecret), sign(Date.now(), body, secret, oldSecret)]) {
    assert.equal(reason(() => both.verify(body, h)), "verified");
    assert.equal(await reason256(both.verifySignature256(body, h)), "verified");
  }
  assert.equal(reason(() => new Verifier(oldSecret).verify(body, sign(Date.now(), body, secret))), "bad_signature");
});
