// Receives the Customer API's webhooks on POST /webhook and verifies each with
// @customerapi/client/webhooks (the official standardwebhooks library underneath)
// before reading it.
//
//   WEBHOOK_SECRET=whsec_… node receiver.mjs
//
// WEBHOOK_SECRET may list several secrets, comma-separated, during a rotation; ADDR is
// the listen address (127.0.0.1:4001).
import { createServer } from "node:http";

import { Verifier } from "@customerapi/client/webhooks";

const verifier = new Verifier(...(process.env.WEBHOOK_SECRET ?? "").split(","));
const [host, port] = (process.env.ADDR ?? "127.0.0.1:4001").split(":");

createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/webhook") {
    res.writeHead(404).end();
    return;
  }
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    // Verify the raw bytes first: webhook-signature signs the event ID, the time and the
    // body, so a tampered, foreign or replayed request is refused.
    const event = verifier.verify(Buffer.concat(chunks), req.headers);
    if (event.test === true) {
      // A test event (POST …/test), whose IDs point at no real object: a real receiver
      // acknowledges it and does no work for it. The x-webhook-test header says the same,
      // but only the body is signed.
      console.log(`verified ${event.eventId} ${event.payload.type} (test)`);
      res.writeHead(204).end();
      return;
    }
    // Deliveries arrive at least once: deduplicate on event.eventId in real code.
    console.log(`verified ${event.eventId} ${event.payload.type}`);
    res.writeHead(204).end();
  } catch (err) {
    console.log(`refused: ${err.message}`);
    res.writeHead(401, { "content-type": "text/plain" }).end("invalid signature\n");
  }
}).listen(Number(port), host, () => console.log(`listening on http://${host}:${port}/webhook`));
