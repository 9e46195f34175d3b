#!/usr/bin/env node
// Follow a table's events over GraphQL subscriptions with a real JavaScript client, as an app would:
// the `graphql-ws` npm client (graphql-transport-ws), or Apollo Client's GraphQLWsLink on top of it,
// with `ws` as Node's WebSocket. Prints one JSON line per happening on stdout and exits 0 at the
// subscription's `complete` (the table is over), 1 on an error.
//
//   node follow.mjs --url ws://127.0.0.1:8000/graphql/ --token <key or token> --table <id> \
//                   --query <file with the subscription document> [--client graphql-ws|apollo]
//                   [--after <id>] [--retries <n>]
//
// The document is a `subscription($tableId: Int!, $after: String) { tableEvents(...) { ... } }`
// selecting each message type's fields with fragments (`... on CardPlayedEvent { seat card }`).
// Lines: {"connected": n} at each connection_ack, {"closed": code} when a socket closes,
// {"message": <the tableEvents object>} per message, {"errors": [...]} for a result with errors,
// {"error": ...} when the subscription fails, {"complete": true} at the end.
//
// Resume: with --retries n the graphql-ws client reconnects by itself after a dropped socket (up to
// n times in a row) and subscribes again; every message stores its id as the `after` variable of
// the subscription's payload first, so the new subscription resumes right after the last message
// received, with nothing missed and nothing repeated.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { createClient } from "graphql-ws";
import WebSocket from "ws";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    table: { type: "string" },
    query: { type: "string" },
    client: { type: "string", default: "graphql-ws" },
    after: { type: "string" },
    retries: { type: "string", default: "0" },
  },
});
for (const name of ["url", "token", "table", "query"]) {
  if (!opts[name]) {
    process.stderr.write(`--${name} is required\n`);
    process.exit(2);
  }
}

const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let connections = 0;
const wsClient = createClient({
  url: opts.url,
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: `Bearer ${opts.token}` },
  retryAttempts: Number(opts.retries),
  retryWait: () => sleep(200),
  lazyCloseTimeout: 10_000, // Apollo's schema query and the subscription share one socket (closed by dispose)
  on: {
    connected: () => print({ connected: ++connections }),
    closed: (event) => print({ closed: event?.code ?? null }),
  },
});

const query = readFileSync(opts.query, "utf8");
const variables = { tableId: Number(opts.table) };
if (opts.after) variables.after = opts.after;

function onResult(result) {
  if (result.errors?.length) print({ errors: result.errors });
  const message = result.data?.tableEvents;
  if (message) {
    variables.after = message.id; // a resubscription after a dropped socket resumes here
    print({ message });
  }
}

function finish(code) {
  wsClient.dispose();
  // stdout is a pipe: let it drain before leaving.
  process.stdout.write("", () => process.exit(code));
}

if (opts.client === "graphql-ws") {
  wsClient.subscribe(
    { query, variables }, // the same object on every resubscription: `after` moves with each message
    {
      next: onResult,
      error: (error) => {
        print({ error: describe(error) });
        finish(1);
      },
      complete: () => {
        print({ complete: true });
        finish(0);
      },
    },
  );
} else if (opts.client === "apollo") {
  const { ApolloClient, InMemoryCache, gql } = await import("@apollo/client");
  const { GraphQLWsLink } = await import("@apollo/client/link/subscriptions");
  const link = new GraphQLWsLink(wsClient);
  // The implementations of the StreamEvent interface, so that the cache matches the fragments on
  // them (an app generates this from the schema at build time; here it is asked of the server).
  const probe = new ApolloClient({ link, cache: new InMemoryCache() });
  const { data } = await probe.query({
    query: gql`
      query StreamEventTypes {
        __type(name: "StreamEvent") {
          possibleTypes {
            name
          }
        }
      }
    `,
    fetchPolicy: "no-cache",
  });
  const possibleTypes = { StreamEvent: data.__type.possibleTypes.map((t) => t.name) };
  const client = new ApolloClient({ link, cache: new InMemoryCache({ possibleTypes }) });
  client.subscribe({ query: gql(query), variables }).subscribe({
    next: (result) => {
      if (result.error) print({ errors: result.error.errors ?? [describe(result.error)] });
      onResult({ data: result.data });
    },
    error: (error) => {
      print({ error: describe(error) });
      finish(1);
    },
    complete: () => {
      print({ complete: true });
      finish(0);
    },
  });
} else {
  process.stderr.write(`unknown --client ${opts.client}\n`);
  process.exit(2);
}

function describe(error) {
  if (Array.isArray(error)) return error;
  if (error && typeof error === "object" && "code" in error && "reason" in error) {
    return { code: error.code, reason: error.reason }; // a close event
  }
  return { message: String(error?.message ?? error), errors: error?.errors };
}
