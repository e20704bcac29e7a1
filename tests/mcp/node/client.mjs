// The official MCP TypeScript SDK's client against kennel's MCP server.
// usage: node client.mjs PORT KENNEL [ARGS...]     `kennel mcp` over stdio
//        node client.mjs PORT --http URL           POST URL (streamable HTTP),
//                                                  token in KENNEL_HTTP_TOKEN
// Runs every scenario tests/mcp/test_sdk.py and tests/mcp/test_http.py
// check and prints one JSON report on stdout; PORT is a listener on the
// host's loopback that code inside must not reach.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [port, command, ...args] = process.argv.slice(2);
const report = {};
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const opts = { timeout: 120000 };

const http = command === "--http";
const transport = http
  ? new StreamableHTTPClientTransport(new URL(args[0]), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.KENNEL_HTTP_TOKEN}` } },
    })
  : new StdioClientTransport({ command, args: ["mcp", ...args], env: process.env, stderr: "inherit" });
const client = new Client({ name: "kennel-sdk-test", version: "1.0.0" });
const t0 = performance.now();
await client.connect(transport);
report.server = client.getServerVersion();
report.tools = (await client.listTools()).tools.map((t) => t.name);
const exec = (code, extra = {}, options = opts) =>
  client.callTool({ name: "python_exec", arguments: { code, ...extra } }, undefined, options);

let r = await exec("x = 41");
report.first_result_ms = performance.now() - t0;
r = await exec("x + 1");
report.persist = text(r);

r = await exec("import matplotlib.pyplot as plt\nplt.plot([1, 2, 4])\nplt.show()");
const img = r.content.find((c) => c.type === "image");
report.image = img ? { mimeType: img.mimeType, magic: Buffer.from(img.data, "base64").subarray(0, 8).toString("hex") } : null;

r = await exec("1/0");
report.zero_division = { isError: r.isError, text: text(r) };

// cancel a busy loop through the SDK's AbortSignal (notifications/cancelled),
// once a progress notification says it runs
const ac = new AbortController();
let running;
const runningNow = new Promise((resolve) => (running = resolve));
const loop = exec("while True: pass", {}, { signal: ac.signal, timeout: 120000, onprogress: () => running() });
await runningNow;
ac.abort("user cancelled");
report.cancel_rejected = await loop.then(() => false, () => true);
const tc = performance.now();
r = await exec("x * 2");
report.after_cancel = { text: text(r), ms: performance.now() - tc };

// progress notifications through the SDK's onprogress
let progress = 0;
await exec("import time; time.sleep(1.2)", {}, { ...opts, onprogress: () => progress++ });
report.progress_notifications = progress;

// no network from inside: the host's loopback listener is unreachable
r = await exec(
  `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=3).close()\n    print('connected')\nexcept OSError as e:\n    print('refused', type(e).__name__)`,
);
report.network = text(r);

r = await client.callTool({ name: "conversation_list", arguments: {} }, undefined, opts);
report.listed = r.structuredContent.conversations.map((c) => c.conversation_id);
if (http) {
  report.session = transport.sessionId ?? null;
  await transport.terminateSession(); // DELETE /mcp
}
await client.close();
console.log(JSON.stringify(report));
