// The official SDK's streamable HTTP client making the calls it is given.
// usage: node calls.mjs URL LANES     token in KENNEL_HTTP_TOKEN
// LANES: JSON, a list of lanes, each a list of {"name", "arguments"}: the
// lanes run at once on one client, each lane's calls in order. Prints one
// JSON line: per lane, per call {"ms" (since the start, at its answer),
// "isError", "text", "structured"}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, lanes] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.KENNEL_HTTP_TOKEN}` } },
});
const client = new Client({ name: "kennel-calls-test", version: "1.0.0" });
await client.connect(transport);
const t0 = performance.now();
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const lane = async (calls) => {
  const out = [];
  for (const call of calls) {
    const r = await client.callTool(call, undefined, { timeout: 120000 });
    out.push({ ms: performance.now() - t0, isError: r.isError === true, text: text(r), structured: r.structuredContent ?? null });
  }
  return out;
};
const report = await Promise.all(JSON.parse(lanes).map(lane));
await transport.terminateSession().catch(() => {});
await client.close();
console.log(JSON.stringify(report));
