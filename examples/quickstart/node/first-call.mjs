// A first call with the TypeScript client (build it once with `make ts-client`): it
// creates a topic and lists every topic of the tenant with the iterator.
// CUSTOMER_API_KEY is the key; CUSTOMER_API_URL the gateway (http://127.0.0.1:25001).
import { CustomerAPI, paginate } from "../../../clients/typescript/dist/src/index.js";

const api = new CustomerAPI({
  baseUrl: process.env.CUSTOMER_API_URL ?? "http://127.0.0.1:25001",
  apiKey: process.env.CUSTOMER_API_KEY ?? "",
});
const created = await api.post("/v0/topics", { body: { title: "Pricing (TypeScript quickstart)" } });
console.log("created", created.topicId);
let n = 0;
for await (const _topic of paginate((cursor) => api.get("/v0/topics", { query: { cursor } }))) n++;
console.log("the tenant has", n, "topics");
