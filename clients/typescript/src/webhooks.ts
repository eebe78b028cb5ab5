// Verifies the webhook deliveries of the Customer API (`@customerapi/client/webhooks`).
//
// Prefer verify(): it checks the Standard Webhooks header webhook-signature with the
// official library (`standardwebhooks` on npm, a peer dependency of this module only),
// which signs the event ID and the timestamp with the body, so a captured request
// replayed later fails the 5-minute check. The spec's X-Webhook-Signature-256 signs the
// body only (its X-Webhook-Timestamp can be changed by whoever replays a request), so
// verifySignature256() is for receivers that cannot read the standard headers; verify()
// never falls back to it.
//
// Several secrets are accepted during a rotation: the new and the old signingSecret.
import { Webhook, WebhookVerificationError } from "standardwebhooks";

/** Tolerance of the timestamps, in seconds (the Standard Webhooks libraries' value). */
export const TOLERANCE_SECONDS = 5 * 60;

export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export type Reason = "missing_headers" | "stale" | "bad_signature";

/** A delivery that does not verify. */
export class VerificationError extends Error {
  constructor(readonly reason: Reason, message: string) {
    super(`webhooks: ${message}`);
    this.name = "VerificationError";
  }
}

function header(h: HeaderBag, name: string): string | undefined {
  if (typeof (h as Headers).get === "function") return (h as Headers).get(name) ?? undefined;
  const bag = h as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v.join(" ") : v;
}

export class Verifier {
  readonly #secrets: string[];
  readonly #std: Webhook[];

  /** Accepts deliveries signed with any of the secrets (whsec_…). */
  constructor(...secrets: string[]) {
    if (secrets.length === 0) throw new TypeError("webhooks: at least one secret is needed");
    this.#secrets = secrets;
    this.#std = secrets.map((s) => new Webhook(s));
  }

  /**
   * Checks webhook-id, webhook-timestamp and webhook-signature against the raw body and
   * returns the parsed event; throws VerificationError otherwise.
   */
  verify<T = unknown>(body: string | Buffer, headers: HeaderBag): T {
    const std: Record<string, string> = {};
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const v = header(headers, name);
      if (v !== undefined) std[name] = v;
    }
    let last: unknown;
    for (const wh of this.#std) {
      try {
        return wh.verify(body, std) as T;
      } catch (err) {
        last = err;
        if (!(err instanceof WebhookVerificationError) || err.message !== "No matching signature found") break;
      }
    }
    const msg = last instanceof Error ? last.message : String(last);
    if (/timestamp too (old|new)/.test(msg)) throw new VerificationError("stale", `timestamp outside the tolerance: ${msg}`);
    if (/Missing required headers|Invalid Signature Headers/.test(msg)) throw new VerificationError("missing_headers", msg);
    throw new VerificationError("bad_signature", `no signature matches: ${msg}`);
  }

  /**
   * Checks the spec's X-Webhook-Signature-256 (hex HMAC-SHA256 of the body keyed with the
   * whole secret string) and that X-Webhook-Timestamp (Unix ms) is within the tolerance.
   * The timestamp is not signed: prefer verify().
   */
  async verifySignature256<T = unknown>(body: string | Buffer, headers: HeaderBag, now: number = Date.now()): Promise<T> {
    const sig = header(headers, "x-webhook-signature-256");
    const ts = header(headers, "x-webhook-timestamp");
    if (!sig || !ts || !/^\d+$/.test(ts)) throw new VerificationError("missing_headers", "missing X-Webhook-Signature-256 or X-Webhook-Timestamp");
    if (Math.abs(now - Number(ts)) > TOLERANCE_SECONDS * 1000) throw new VerificationError("stale", "timestamp outside the tolerance");
    const bytes = typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body);
    for (const secret of this.#secrets) {
      const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, bytes));
      const want = "sha256=" + Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
      if (constantTimeEqual(want, sig)) return JSON.parse(new TextDecoder().decode(bytes)) as T;
    }
    throw new VerificationError("bad_signature", "no signature matches");
  }
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
