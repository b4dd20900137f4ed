// Chat: a turn of saip's chat with the published tools and the knowledge pipeline the person picks, and the
// conversations, the ones an AI ran with saip_chat_ask among them, as if typed.
import { useState } from "preact/hooks";
import { get, post, segment } from "../api";
import { useAction, useResource } from "../resource";
import { navigate, useLocation } from "../router";
import { Badge, Choice, Field, Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";

interface Published {
  name: string;
  title: string;
  description: string;
  source: string;
}

interface Turn {
  turnId: string;
  at: string;
  client: string;
  prompt: string;
  answer: string;
  status: string;
  model: string;
  tokens: number;
  toolCalls: { name: string; outcome: string }[];
  pipeline: string | null;
  sources: { document: string; position: number; page: number | null; relevance: number }[];
}

interface Conversation {
  conversationId: string;
  title: string;
  updatedAt: string;
  turnCount: number;
  lastAnswer: string;
  waitingForApproval: boolean;
  turns?: Turn[];
}

export default function Chat() {
  const { query } = useLocation();
  const open = query.get("conversation");
  const listing = useResource(
    (signal) => get<{ conversations: Conversation[] }>("/chat/conversations", { turns: 0, limit: 100 }, signal),
    [],
    ["chat"],
  );
  const conversations = listing.envelope?.data.conversations ?? [];
  const choose = (id: string | null) => navigate(id ? `/chat?conversation=${encodeURIComponent(id)}` : "/chat");
  return (
    <>
      <div class="page-head">
        <h1>Chat</h1>
        <button type="button" onClick={() => choose(null)}>
          New conversation
        </button>
      </div>
      <LoadError error={listing.error} retry={listing.reload} />
      {listing.envelope?.warnings.map((warning) => (
        <div class="notice info" key={warning}>
          <p>{warning}</p>
        </div>
      ))}
      <div class="split chat">
        <nav aria-label="Conversations">
          <h2>Conversations</h2>
          {conversations.length === 0 && <p class="empty">No conversation yet.</p>}
          <ul class="plain-list">
            {conversations.map((conversation) => (
              <li key={conversation.conversationId}>
                <button
                  type="button"
                  class="quiet link"
                  aria-current={conversation.conversationId === open ? "true" : undefined}
                  onClick={() => choose(conversation.conversationId)}
                >
                  {conversation.title || conversation.conversationId}
                </button>{" "}
                <span class="muted">
                  {conversation.turnCount} turns, <Time iso={conversation.updatedAt} />
                </span>
                {conversation.waitingForApproval && <Badge tone="warn">waiting for approval</Badge>}
              </li>
            ))}
          </ul>
        </nav>
        <div>
          {open ? <Thread id={open} /> : <p class="muted">A new conversation starts with the first turn below.</p>}
          <Composer conversation={open} onAsked={(id) => (choose(id), listing.reload())} />
        </div>
      </div>
    </>
  );
}

function Thread({ id }: { id: string }) {
  const thread = useResource((signal) => get<Conversation>(`/chat/conversations/${segment(id)}`, {}, signal), [id], ["chat"]);
  const turns = thread.envelope?.data.turns ?? [];
  return (
    <section aria-labelledby="thread">
      <h2 id="thread">{thread.envelope?.data.title ?? "Conversation"}</h2>
      <LoadError error={thread.error} retry={thread.reload} />
      <ol class="turns" aria-label="Turns">
        {turns.map((turn) => (
          <li key={turn.turnId} class="card">
            <p class="muted">
              <Time iso={turn.at} />, asked by {turn.client} <Badge tone={turn.status === "ok" ? "ok" : "warn"}>{turn.status}</Badge>
            </p>
            <p class="prompt">{turn.prompt}</p>
            {turn.toolCalls.length > 0 && (
              <p class="muted">Tools: {turn.toolCalls.map((call) => `${call.name} (${call.outcome})`).join(", ")}</p>
            )}
            <p class="answer">{turn.answer}</p>
            {turn.sources.length > 0 && (
              <p class="muted">
                From {turn.pipeline}: {turn.sources.map((source) => `${source.document} #${source.position}`).join(", ")}
              </p>
            )}
            <p class="hint">
              {turn.model}, {turn.tokens} tokens
            </p>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Composer({ conversation, onAsked }: { conversation: string | null; onAsked: (id: string) => void }) {
  const status = useResource((signal) => get<{ mcp: { published: Published[] } }>("/status", {}, signal), [], ["tools", "knowledge", "servers"]);
  const pipelines = useResource((signal) => get<{ pipelines: { name: string }[] }>("/knowledge/pipelines", {}, signal), [], ["knowledge"]);
  const [prompt, setPrompt] = useState("");
  const [tools, setTools] = useState<string[]>([]);
  const [pipeline, setPipeline] = useState("");
  const ask = useAction(() =>
    post<{ conversationId: string }>("/chat/ask", {
      prompt,
      tools,
      ...(pipeline ? { pipeline } : {}),
      ...(conversation ? { conversationId: conversation } : {}),
    }),
  );
  const published = status.envelope?.data.mcp.published ?? [];
  return (
    <form
      aria-labelledby="composer"
      onSubmit={async (event) => {
        event.preventDefault();
        const answer = await ask.run();
        // A turn refused (no model configured, a tool not published) is a 4xx, and `run` gives null; a turn that ran
        // and failed (the model's error, a timeout) is 200 with ok false and its conversation. Either way the prompt
        // stays for the person to ask again, and a conversation the turn did start opens.
        const started = (answer?.data as { conversationId?: string } | null | undefined)?.conversationId;
        if (answer?.ok) setPrompt("");
        if (started) onAsked(started);
      }}
    >
      <h2 id="composer">{conversation ? "Continue the conversation" : "Start a conversation"}</h2>
      <Field label="Prompt">
        {(id) => <textarea id={id} value={prompt} maxLength={20000} onInput={(event) => setPrompt(event.currentTarget.value)} />}
      </Field>
      <fieldset>
        <legend>Published tools the model may call</legend>
        {published.length === 0 && <p class="empty">Nothing is published on /mcp yet.</p>}
        {published.map((tool) => (
          <label class="choice tool-choice" key={tool.name}>
            <input
              type="checkbox"
              checked={tools.includes(tool.name)}
              onChange={(event) => setTools(event.currentTarget.checked ? [...tools, tool.name] : tools.filter((kept) => kept !== tool.name))}
            />{" "}
            <code>{tool.name}</code> <span class="muted">{tool.title || tool.description.slice(0, 80)}</span>
          </label>
        ))}
      </fieldset>
      <Choice
        label="Knowledge pipeline"
        hint="Its passages for the prompt are given to the model, with their sources."
        value={pipeline}
        options={(pipelines.envelope?.data.pipelines ?? []).map((found) => found.name)}
        onChange={setPipeline}
        none="none"
      />
      <div class="actions">
        <button type="submit" class="primary" disabled={ask.pending || !prompt.trim()}>
          {ask.pending ? "The model is answering…" : "Ask"}
        </button>
      </div>
      <p class="hint">A tool that asks for approval is declined in a turn run from here, as for any client that cannot ask.</p>
      <Notice outcome={ask.outcome} onClose={ask.clear} />
    </form>
  );
}
