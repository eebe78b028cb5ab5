export { APIError, CustomerAPI, paginate, retryAfterMs } from "./client.js";
export type { ClientOptions, ErrorEnvelope, ListPage, Method, Ok, Operation, PathsWith, RequestInit, UnauthorizedReason } from "./client.js";
export type { components, operations, paths } from "./schema.gen.js";

/** The schemas of the document by name, e.g. Schema<"Page">. */
export type Schema<N extends keyof import("./schema.gen.js").components["schemas"]> = import("./schema.gen.js").components["schemas"][N];
