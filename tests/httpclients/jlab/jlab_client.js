// JupyterLab's own kernel client (@jupyterlab/services, KernelManager and
// KernelConnection) against a server's kernels API: start, execute,
// interrupt, restart, complete, shut down. Prints one JSON object of what
// it saw; test_jlab_services.py asserts on it.
//   node jlab_client.js BASE_URL TOKEN
'use strict';
const { KernelManager, KernelAPI, ServerConnection } = require('@jupyterlab/services');
const WS = require('ws');

const [baseUrl, token] = process.argv.slice(2);
const seen = { offered: [], protocols: [], steps: [] };

// Records the subprotocols each websocket offered and the one it settled on
// ('' = the legacy JSON protocol; the client retries without any offer when
// a server ignores them).
class RecordingWebSocket extends WS {
  constructor(url, protocols) {
    super(url, protocols);
    seen.offered.push(protocols || []);
    this.on('open', () => seen.protocols.push(this.protocol));
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// Runs code; returns the reply content and the iopub outputs of the request.
async function execute(kernel, code) {
  const outputs = [];
  const future = kernel.requestExecute({ code });
  future.onIOPub = msg => {
    const t = msg.header.msg_type;
    if (t === 'stream') outputs.push({ type: t, text: msg.content.text });
    else if (t === 'execute_result' || t === 'display_data')
      outputs.push({ type: t, data: Object.keys(msg.content.data), text: msg.content.data['text/plain'] });
    else if (t === 'error') outputs.push({ type: t, ename: msg.content.ename });
  };
  const reply = await withTimeout(future.done, 30000, code);
  return { status: reply.content.status, ename: reply.content.ename, outputs };
}

async function interruptSleep(kernel) {
  // interrupted once the cell's code is running (its first output), as a
  // person does after seeing it run
  const future = kernel.requestExecute({ code: "import time\nprint('sleeping', flush=True)\ntime.sleep(30)" });
  let busy;
  const running = new Promise(resolve => { busy = resolve; });
  future.onIOPub = msg => { if (msg.header.msg_type === 'stream') busy(); };
  await withTimeout(running, 30000, 'the first output of the sleep');
  const start = Date.now();
  await kernel.interrupt();
  const reply = await withTimeout(future.done.catch(e => e), 30000, 'the interrupted sleep');
  return { status: reply.content.status, ename: reply.content.ename, ms: Date.now() - start };
}

async function main() {
  const serverSettings = ServerConnection.makeSettings({
    baseUrl, wsUrl: baseUrl.replace(/^http/, 'ws'), token, appendToken: true,
    WebSocket: RecordingWebSocket, fetch, Request, Headers
  });
  const manager = new KernelManager({ serverSettings });
  await manager.ready;
  const kernel = await manager.startNew({ name: 'python3' });
  seen.kernel_id = kernel.id;
  const info = await withTimeout(kernel.info, 30000, 'kernel_info');
  seen.language = info.language_info.name;
  seen.steps.push({ step: 'execute', ...(await execute(kernel, "print('hello')\nx = 6 * 7\nx")) });
  seen.steps.push({ step: 'interrupt', ...(await interruptSleep(kernel)) });
  seen.steps.push({ step: 'after_interrupt', ...(await execute(kernel, 'x + 1')) });
  const completion = await withTimeout(kernel.requestComplete({ code: 'import os\nos.pa', cursor_pos: 15 }), 30000, 'complete');
  seen.steps.push({ step: 'complete', status: completion.content.status, matches: completion.content.matches,
                   cursor_start: completion.content.cursor_start, cursor_end: completion.content.cursor_end });
  await withTimeout(kernel.restart(), 60000, 'restart');
  await withTimeout(kernel.info, 30000, 'kernel_info after restart');
  seen.steps.push({ step: 'after_restart', ...(await execute(kernel, "'x' in globals()")) });
  await kernel.shutdown();
  const running = await KernelAPI.listRunning(serverSettings);
  seen.listed_after_shutdown = running.some(k => k.id === seen.kernel_id);
  manager.dispose();
  process.stdout.write(JSON.stringify(seen) + '\n');
}

main().then(() => process.exit(0), err => {
  process.stdout.write(JSON.stringify({ ...seen, error: String(err && err.stack || err) }) + '\n');
  process.exit(1);
});
