// What the official SDK's streamable HTTP client does with a server that
// wants a token it was not given, and has no OAuth.
// usage: node auth.mjs URL
// Prints one JSON report: "plain": a client without an auth provider (its
// error); "oauth": a client with an OAuth provider as the MCP Inspector
// has one (no stored client, dynamic registration possible): its error,
// whether it was sent to an authorization page, and every request it made
// (method, path, status, the 401's WWW-Authenticate); "discovery": the
// SDK's own RFC 9728 lookup of the server's protected resource metadata.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { discoverOAuthProtectedResourceMetadata } from "@modelcontextprotocol/sdk/client/auth.js";

const url = new URL(process.argv[2]);
const requests = [];
const recording = async (input, init) => {
  const r = await fetch(input, init);
  const u = new URL(input instanceof Request ? input.url : String(input));
  requests.push({ method: init?.method ?? "GET", path: u.pathname, status: r.status,
                  wwwAuthenticate: r.headers.get("www-authenticate") });
  return r;
};
const failure = (e) => ({ name: e?.constructor?.name ?? typeof e, code: e?.code ?? null, message: String(e?.message ?? e) });

const report = {};
try {
  await new Client({ name: "kennel-auth-test", version: "1" }).connect(new StreamableHTTPClientTransport(url));
  report.plain = { connected: true };
} catch (e) {
  report.plain = failure(e);
}

let redirected = null;
const provider = {
  get redirectUrl() { return "http://127.0.0.1:6274/oauth/callback"; },
  get clientMetadata() {
    return { redirect_uris: ["http://127.0.0.1:6274/oauth/callback"], client_name: "inspector-like",
             grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
             token_endpoint_auth_method: "none" };
  },
  clientInformation: () => undefined,
  saveClientInformation: () => {},
  tokens: () => undefined,
  saveTokens: () => {},
  redirectToAuthorization: (u) => { redirected = String(u); },
  saveCodeVerifier: () => {},
  codeVerifier: () => "verifier",
};
try {
  await new Client({ name: "kennel-auth-test", version: "1" })
    .connect(new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recording }));
  report.oauth = { connected: true };
} catch (e) {
  report.oauth = failure(e);
}
report.oauth.redirected = redirected;
report.oauth.requests = requests;

try {
  report.discovery = { metadata: await discoverOAuthProtectedResourceMetadata(url) };
} catch (e) {
  report.discovery = failure(e);
}
console.log(JSON.stringify(report));
