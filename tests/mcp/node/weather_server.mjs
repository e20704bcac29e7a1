// A tiny MCP server written with the official SDK, for kennel's
// --tools-from-mcp test: kennel is its MCP client and offers its tools
// inside the kernel. Low-level Server API with plain JSON Schemas.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "weather", version: "1.0.0" }, { capabilities: { tools: {} } });
const tools = [
  { name: "weather", description: "Weather of a city",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  { name: "shout", description: "Upper-cases text",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
  { name: "broken", description: "Always fails", inputSchema: { type: "object", properties: {} } },
  { name: "fancy", description: "A schema outside kennel's checked subset",
    inputSchema: { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]+$" } } } },
];
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const { name, arguments: args } = req.params;
  if (name === "weather")
    return { content: [{ type: "text", text: JSON.stringify({ city: args.city, temp: 21 }) }],
             structuredContent: { city: args.city, temp: 21, pid: process.pid } };
  if (name === "shout") return { content: [{ type: "text", text: args.text.toUpperCase() }] };
  if (name === "broken") return { content: [{ type: "text", text: "the weather service is down" }], isError: true };
  if (name === "fancy") return { content: [{ type: "text", text: `got ${args.code}` }] };
  throw new Error(`no tool ${name}`);
});
await server.connect(new StdioServerTransport());
