// JupyterLab's own contents client (@jupyterlab/services ContentsManager over
// a Drive) against a server's Contents API: save text, base64 and a
// directory, get them back, list, get without content, delete; then what the
// file browser does in a directory fb: new untitled file, notebook and
// directory, rename, copy, a notebook read as type notebook, checkpoints
// made, listed, restored and deleted, and everything deleted again. The drive's
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
  seen.after_delete = await status(contents.get('sub/data.bin'));
  await fileBrowser(contents);
}

// The HTTP status a call failed with ('ok' when it did not fail).
async function status(promise) {
  try {
    await promise;
    return 'ok';
  } catch (e) {
    return e.response ? e.response.status : String(e);
  }
}

const NB = { cells: [{ cell_type: 'code', execution_count: null, id: 'c1', metadata: {}, outputs: [],
                       source: '6 * 7' }], metadata: {}, nbformat: 4, nbformat_minor: 5 };

async function fileBrowser(contents) {
  await contents.save('fb', { type: 'directory' });
  seen.untitled = [];
  for (const options of [{ type: 'file', ext: '.txt' }, { type: 'file', ext: '.txt' }, { type: 'notebook' },
                         { type: 'directory' }]) {
    const m = await contents.newUntitled({ path: 'fb', ...options });
    seen.untitled.push([m.path, m.type]);
  }
  const empty = await contents.get('fb/Untitled.ipynb');
  seen.new_notebook = [empty.type, empty.format, empty.content.nbformat, empty.content.cells.length];
  await contents.save('fb/untitled.txt', { type: 'file', format: 'text', content: 'v1\n' });
  seen.renamed = pick(await contents.rename('fb/untitled.txt', 'fb/notes.txt'));
  seen.copied = pick(await contents.copy('fb/notes.txt', 'fb'));
  seen.copied_into = pick(await contents.copy('fb/notes.txt', 'fb/Untitled Folder'));
  seen.copy_text = (await contents.get('fb/notes-Copy1.txt')).content;
  seen.rename_conflict = await status(contents.rename('fb/notes.txt', 'fb/notes-Copy1.txt'));
  seen.rename_missing = await status(contents.rename('fb/nothing.txt', 'fb/x.txt'));
  await contents.save('fb/Untitled.ipynb', { type: 'notebook', format: 'json', content: NB });
  const nb = await contents.get('fb/Untitled.ipynb');
  seen.notebook = [nb.type, nb.format, nb.mimetype, nb.content.cells[0].source];
  const cp = await contents.createCheckpoint('fb/Untitled.ipynb');
  seen.checkpoint = [cp.id, typeof cp.last_modified];
  seen.checkpoints = (await contents.listCheckpoints('fb/Untitled.ipynb')).map(c => c.id);
  await contents.save('fb/Untitled.ipynb', { type: 'notebook', format: 'json', content: { ...NB, cells: [] } });
  await contents.restoreCheckpoint('fb/Untitled.ipynb', cp.id);
  seen.restored_cells = (await contents.get('fb/Untitled.ipynb')).content.cells.length;
  await contents.deleteCheckpoint('fb/Untitled.ipynb', cp.id);
  seen.checkpoints_after_delete = (await contents.listCheckpoints('fb/Untitled.ipynb')).length;
  seen.restore_deleted = await status(contents.restoreCheckpoint('fb/Untitled.ipynb', cp.id));
  await contents.save('fb/bad.ipynb', { type: 'file', format: 'text', content: 'not json' });
  seen.unreadable_notebook = await status(contents.get('fb/bad.ipynb'));
  seen.fb = pick(await contents.get('fb'));
  for (const path of ['fb/notes.txt', 'fb/notes-Copy1.txt', 'fb/untitled1.txt', 'fb/Untitled.ipynb', 'fb/bad.ipynb',
                      'fb/Untitled Folder/notes.txt', 'fb/Untitled Folder', 'fb']) {
    await contents.delete(path);
  }
  seen.fb_after_delete = await status(contents.get('fb'));
}

main().then(() => console.log(JSON.stringify(seen)),
            e => { seen.error = String(e && e.stack || e); console.log(JSON.stringify(seen)); process.exit(1); });
