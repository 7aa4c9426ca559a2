// The HTTP side of the Sidenet test endpoints whose agent is an AI SDK UI message stream
// (ai-sdk-endpoint.mjs, langchain-endpoint.mjs): the chat route, the agent's run route (the same
// chunks collected in one JSON body), the replay route and the history route, on 127.0.0.1.
import http from 'node:http';

/** A stream of the chunks given. */
export const streamOf = (chunks) =>
  new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });

/**
 * Serves `chat(body)` (a POST's answer: `{ stream }` of chunks, or `{ status, json }`) on
 * `POST /v1/chat` (streamed, framed by `createUIMessageStreamResponse`, the SDK's own) and
 * `POST /v1/agents/{id}/run` (collected); `GET /v1/chat/stream?threadId=` replays
 * `threads.get(id).run.chunks` (204 without a run) and `GET /v1/threads/{id}` answers
 * `threads.get(id).messages`. Each request goes into `requests` (`{ method, path, threadId,
 * body }`). Resolves to `{ url, close }`.
 */
export async function serveUIStream({ chat, threads, requests, createUIMessageStreamResponse }) {
  async function respond(req, res) {
    const url = new URL(req.url, 'http://x');
    requests.push({ method: req.method, path: url.pathname, threadId: url.searchParams.get('threadId') ?? decodeURIComponent(url.pathname.split('/v1/threads/')[1] ?? '') });
    const send = (status, json) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    let out;
    const run = /^\/v1\/agents\/[^/]+\/run$/.test(url.pathname);
    if (req.method === 'POST' && (url.pathname === '/v1/chat' || run)) {
      let text = '';
      for await (const c of req) text += c;
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        return send(400, { error: 'invalid JSON' });
      }
      requests.at(-1).body = body;
      requests.at(-1).threadId = body?.threadId;
      out = await chat(body);
    } else if (req.method === 'GET' && url.pathname === '/v1/chat/stream') {
      const thread = threads.get(url.searchParams.get('threadId'));
      if (!thread?.run) {
        res.writeHead(204);
        return res.end();
      }
      out = { stream: streamOf(thread.run.chunks) };
    } else if (req.method === 'GET' && url.pathname.startsWith('/v1/threads/')) {
      const id = decodeURIComponent(url.pathname.slice('/v1/threads/'.length));
      return send(200, { id, messages: threads.get(id)?.messages ?? [] });
    } else {
      return send(404, { error: 'not found' });
    }
    if (!out.stream) return send(out.status, out.json);
    if (run) {
      // The agent's run route answers the same chunks collected (Sidenet's `transport: 'collect'`).
      const chunks = [];
      for await (const chunk of out.stream) chunks.push(chunk);
      const finish = chunks.findLast((c) => c.type === 'finish');
      return send(200, { chunks, finishReason: finish?.finishReason ?? null });
    }
    // The SDK's own response: SSE framing, `data: [DONE]` and its headers.
    const response = createUIMessageStreamResponse({ stream: out.stream });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    for await (const chunk of response.body) res.write(chunk);
    res.end();
  }

  const server = http.createServer((req, res) => {
    respond(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(e?.stack ?? e) }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
