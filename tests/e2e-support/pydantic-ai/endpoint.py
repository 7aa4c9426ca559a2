# A Sidenet endpoint whose agent is pydantic-ai's: its `Agent` with tools that need approval
# (`requires_approval`, and `ApprovalRequired` raised by a tool's own policy), its Vercel AI adapter
# (`VercelAIAdapter`, `sdk_version=7`) for the stream and for the history (`dump_messages`). Only the
# model is scripted (pydantic-ai's own `FunctionModel`), so what toolgate reads here is what a
# server built on pydantic-ai writes, chunk for chunk.
#
# What pydantic-ai leaves to the server is done here as a Sidenet server would: a run id named by a
# `data-run` chunk after `start`, one `approval` per POST, the run continued (with
# `DeferredToolResults`) once no call of it waits, the calls still waiting announced again after a
# partial answer, and a replay route that sends the stream that paused again, whole.
# `POST /v1/agents/{id}/run` answers the same chunks collected in one JSON body.
#
# Usage: python endpoint.py  (binds 127.0.0.1 on a free port and prints `listening <port>`).
# GET /debug answers {effects, requests, runs}: every tool run, every request, each thread's paused run.
import json
import re
import socket
import sys
import uuid
from dataclasses import dataclass, field

import uvicorn
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from pydantic_ai.ui.vercel_ai.request_types import SubmitMessage, TextUIPart, UIMessage
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

AGENT_VERSION = 'agv_pydantic_ai_1'
effects = []
requests_log = []


def plan(text, step):
    """The calls the scripted model makes for a user's text at a step: `email <to> «<body>»`,
    `read <path>`, `delete <path>` (`garbled`: a send_email call whose input is not JSON; `ghost`:
    a call of a tool there is not); a text with ` then ` in it is that many steps."""
    parts = text.split(' then ')
    if step >= len(parts):
        return []
    part = parts[step]
    calls = []
    for m in re.finditer(r'email (\S+@\S+) «([^»]*)»', part):
        calls.append(('send_email', {'to': m.group(1), 'body': m.group(2)}))
    for m in re.finditer(r'read (/\S+)', part):
        calls.append(('read_file', {'path': m.group(1)}))
    for m in re.finditer(r'delete (/\S+)', part):
        calls.append(('delete_file', {'path': m.group(1)}))
    if re.search(r'\bgarbled\b', part):
        calls.append(('send_email', '{"to": 5'))
    if re.search(r'\bghost\b', part):
        calls.append(('ghost_tool', {}))
    return calls


async def stream_fn(messages: list[ModelMessage], info: AgentInfo):
    """The model: a sentence and the step's calls (their input streamed in pieces of 7), or, with
    none left, the results it got, in words (streamed in two halves); `crash` fails mid-reply."""
    user_at = max(i for i, m in enumerate(messages) if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts))
    text = ''.join(p.content for p in messages[user_at].parts if isinstance(p, UserPromptPart) and isinstance(p.content, str))
    step = sum(1 for m in messages[user_at:] if isinstance(m, ModelResponse))
    if 'crash' in text and step == 0:
        yield 'Let me'
        raise RuntimeError('provider overloaded')
    calls = plan(text, step)
    if calls:
        yield 'On it.'
        for i, (name, args) in enumerate(calls):
            js = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            yield {i: DeltaToolCall(name=name, json_args=js[:7], tool_call_id='call_' + uuid.uuid4().hex[:8])}
            for k in range(7, len(js), 7):
                yield {i: DeltaToolCall(json_args=js[k:k + 7])}
        return
    last = messages[-1]
    outcomes = []
    for p in last.parts if isinstance(last, ModelRequest) else []:
        if isinstance(p, ToolReturnPart):
            outcomes.append(f'{p.tool_name}: {p.model_response_str()}')
        elif isinstance(p, RetryPromptPart):
            outcomes.append(f'{p.tool_name}: refused')
    answer = '; '.join(outcomes) or 'Nothing to do.'
    half = (len(answer) + 1) // 2
    yield answer[:half]
    yield answer[half:]


agent = Agent(FunctionModel(stream_function=stream_fn), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def send_email(to: str, body: str) -> dict:
    """Send an email (waits for a person). To a bounce@ address it fails, which ends the run."""
    effects.append({'name': 'send_email', 'input': {'to': to, 'body': body}})
    if to.startswith('bounce@'):
        raise RuntimeError(f'mailbox {to} does not exist')
    return {'sent': True, 'to': to}


@agent.tool_plain
def read_file(path: str) -> str:
    """Read a file (not gated)."""
    effects.append({'name': 'read_file', 'input': {'path': path}})
    return f'contents of {path}'


@agent.tool
def delete_file(ctx: RunContext, path: str) -> dict:
    """Delete a file: the tool's own policy lets a path under /tmp/ through, and asks for any other."""
    if not path.startswith('/tmp/') and not ctx.tool_call_approved:
        raise ApprovalRequired
    effects.append({'name': 'delete_file', 'input': {'path': path}})
    return {'deleted': path}


@dataclass
class Thread:
    history: list = field(default_factory=list)
    # The paused run: {runId, chunks (the SSE events of the stream that paused, for the replay),
    # pending: {callId: None (waiting) | bool (the decision)}, calls: {callId: (name, args)}}.
    run: dict | None = None


threads: dict[str, Thread] = {}


def sse(obj):
    return f'data: {json.dumps(obj, ensure_ascii=False)}\n\n'


def run_chunk(run_id):
    return sse({'type': 'data-run', 'data': {'runId': run_id, 'agentVersionId': AGENT_VERSION}})


async def agent_stream(thread: Thread, run_id: str, user_text: str | None, results: DeferredToolResults | None):
    """The agent on from the thread's history (with a new user message, or the decisions): the
    adapter's stream, a `data-run` chunk after its `start`; the history and the pause kept at its end."""
    messages = [UIMessage(id='msg_' + uuid.uuid4().hex[:8], role='user', parts=[TextUIPart(text=user_text)])] if user_text is not None else []
    adapter = VercelAIAdapter(agent=agent, run_input=SubmitMessage(id=run_id, messages=messages), sdk_version=7)
    chunks = []
    done = {}

    async def on_complete(result):
        done['messages'] = result.all_messages()
        done['output'] = result.output
        return
        yield

    events = adapter.run_stream(message_history=thread.history, deferred_tool_results=results, on_complete=on_complete)
    first = True
    async for event in adapter.encode_stream(events):
        chunks.append(event)
        yield event
        if first:
            first = False
            chunks.append(run_chunk(run_id))
            yield chunks[-1]
    thread.run = None
    if 'messages' in done:
        thread.history = done['messages']
        out = done['output']
        if isinstance(out, DeferredToolRequests) and out.approvals:
            thread.run = {
                'runId': run_id,
                'chunks': chunks,
                'pending': {c.tool_call_id: None for c in out.approvals},
                'calls': {c.tool_call_id: (c.tool_name, c.args_as_dict()) for c in out.approvals},
            }


async def replay(chunks):
    for c in chunks:
        yield c


def announce(thread: Thread):
    """The calls of the paused run still waiting, announced again after a partial answer."""
    run = thread.run
    chunks = [sse({'type': 'start'}), run_chunk(run['runId'])]
    for call_id, decision in run['pending'].items():
        if decision is None:
            name, args = run['calls'][call_id]
            chunks.append(sse({'type': 'tool-input-available', 'toolCallId': call_id, 'toolName': name, 'input': args}))
            chunks.append(sse({'type': 'tool-approval-request', 'approvalId': call_id, 'toolCallId': call_id}))
    chunks += [sse({'type': 'finish', 'finishReason': 'tool-calls'}), 'data: [DONE]\n\n']
    run['chunks'] = chunks
    return replay(chunks)


def streaming(gen):
    return StreamingResponse(gen, media_type='text/event-stream', headers={'x-vercel-ai-ui-message-stream': 'v1', 'cache-control': 'no-cache'})


async def collected(gen):
    """The agent's run route: the same chunks, collected (Sidenet's `transport: 'collect'`)."""
    chunks = []
    async for event in gen:
        data = event.removeprefix('data: ').strip()
        if data and data != '[DONE]':
            chunks.append(json.loads(data))
    finish = next((c for c in reversed(chunks) if c.get('type') == 'finish'), None)
    return JSONResponse({'chunks': chunks, 'finishReason': (finish or {}).get('finishReason')})


async def chat(request):
    try:
        body = json.loads(await request.body())
    except ValueError:
        return JSONResponse({'error': 'invalid JSON'}, 400)
    requests_log.append({'method': 'POST', 'path': request.url.path, 'body': body, 'threadId': body.get('threadId')})
    thread_id = body.get('threadId')
    if not isinstance(thread_id, str) or not isinstance(body.get('messages'), list):
        return JSONResponse({'error': 'threadId and messages are required'}, 400)
    thread = threads.setdefault(thread_id, Thread())

    async def answer(gen):
        return await collected(gen) if request.url.path.startswith('/v1/agents/') else streaming(gen)

    approval = body.get('approval')
    if approval:
        run = thread.run
        if not run or run['runId'] != approval.get('runId'):
            return JSONResponse({'error': 'no paused run', 'code': 'run_not_found'}, 409)
        if body.get('agentVersionId') not in (None, AGENT_VERSION):
            return JSONResponse({'error': 'agent version mismatch', 'code': 'agent_version_mismatch'}, 409)
        call_id = approval.get('toolCallId')
        if call_id not in run['pending'] or run['pending'][call_id] is not None:
            return JSONResponse({'error': f'{call_id} is not awaiting approval', 'code': 'tool_call_not_pending'}, 409)
        run['pending'][call_id] = approval.get('approved') is True
        if any(d is None for d in run['pending'].values()):
            return await answer(announce(thread))
        return await answer(agent_stream(thread, run['runId'], None, DeferredToolResults(approvals=dict(run['pending']))))
    if thread.run:
        return JSONResponse({'error': 'the run is awaiting approval', 'code': 'run_paused'}, 409)
    last = body['messages'][-1] if body['messages'] else {}
    text = next((p.get('text') for p in last.get('parts', []) if p.get('type') == 'text'), None)
    if not isinstance(text, str):
        return JSONResponse({'error': 'a user message with a text part is required'}, 400)
    return await answer(agent_stream(thread, 'run_' + uuid.uuid4().hex[:8], text, None))


async def chat_stream(request):
    thread_id = request.query_params.get('threadId')
    requests_log.append({'method': 'GET', 'path': request.url.path, 'threadId': thread_id})
    thread = threads.get(thread_id)
    if not thread or not thread.run:
        return Response(status_code=204)
    return streaming(replay(thread.run['chunks']))


async def thread_get(request):
    thread_id = request.path_params['thread_id']
    requests_log.append({'method': 'GET', 'path': request.url.path, 'threadId': thread_id})
    thread = threads.get(thread_id)
    messages = VercelAIAdapter.dump_messages(thread.history, sdk_version=7) if thread else []
    return JSONResponse({'id': thread_id, 'messages': [m.model_dump(mode='json', by_alias=True, exclude_none=True) for m in messages]})


async def debug(request):
    runs = {k: t.run and {'runId': t.run['runId'], 'pending': t.run['pending']} for k, t in threads.items()}
    return JSONResponse({'effects': effects, 'requests': requests_log, 'runs': runs})


app = Starlette(routes=[
    Route('/v1/chat', chat, methods=['POST']),
    Route('/v1/agents/{agent_id}/run', chat, methods=['POST']),
    Route('/v1/chat/stream', chat_stream, methods=['GET']),
    Route('/v1/threads/{thread_id:path}', thread_get, methods=['GET']),
    Route('/debug', debug, methods=['GET']),
])

if __name__ == '__main__':
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    print(f'listening {sock.getsockname()[1]}', flush=True)
    config = uvicorn.Config(app, log_level='warning')
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)
