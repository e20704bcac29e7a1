// JupyterLab's own contents client (@jupyterlab/services ContentsManager over
// a Drive) against a server's Contents API: save text, base64 and a
// directory, get them back, list, get without content, delete. The drive's
// apiEndpoint is the server's (jupyter: api/contents; kennel: one
// conversation's, api/contents/<kernel id>). Prints one JSON object of what
// it saw; test_jlab_services.py asserts on it.
//   node jlab_contents.js BASE_URL TOKEN API_ENDPOINT
'use strict';
const { ContentsManager, Drive, ServerConnection } = require('@jupyterlab/services');

const [baseUrl, token, apiEndpoint] = process.argv.slice(2);
const seen = {};

function pick(model) {
  return { name: model.name, path: model.path, type: model.type, format: model.format,
           content: Array.isArray(model.content) ? model.content.map(e => [e.name, e.type]).sort() : model.content,
           mimetype: model.mimetype, size: model.size };
}

async function main() {
  const serverSettings = ServerConnection.makeSettings({ baseUrl, token, appendToken: true, fetch, Request, Headers });
  const contents = new ContentsManager({ serverSettings, defaultDrive: new Drive({ serverSettings, apiEndpoint }) });
  const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256));
  seen.saved_text = pick(await contents.save('hello.txt', { type: 'file', format: 'text', content: 'hello kennel\n' }));
  seen.saved_dir = pick(await contents.save('sub', { type: 'directory' }));
  seen.saved_b64 = pick(await contents.save('sub/data.bin',
    { type: 'file', format: 'base64', content: bytes.toString('base64') }));
  seen.text = pick(await contents.get('hello.txt'));
  const b64 = await contents.get('sub/data.bin', { type: 'file', format: 'base64', content: true });
  seen.b64_equal = Buffer.from(b64.content, 'base64').equals(bytes);
  seen.b64 = pick(b64);
  seen.root = pick(await contents.get(''));
  seen.no_content = pick(await contents.get('hello.txt', { content: false }));
  await contents.delete('sub/data.bin');
  try {
    await contents.get('sub/data.bin');
    seen.after_delete = 'found';
  } catch (e) {
    seen.after_delete = e.response ? e.response.status : String(e);
  }
}

main().then(() => console.log(JSON.stringify(seen)),
            e => { seen.error = String(e && e.stack || e); console.log(JSON.stringify(seen)); process.exit(1); });
