// The client part of the AI SDK that a chat UI with tool approvals loads: the chat state class,
// the HTTP transport and the UI-message-stream reader. Referenced so esbuild keeps them.
import { AbstractChat, DefaultChatTransport, readUIMessageStream } from 'ai';

export { AbstractChat, DefaultChatTransport, readUIMessageStream };
