// Overview / MCP server: the management surface on or off (with the registrar's own reason), the MCP token, each
// service's health, and the management settings in force.
import { useState } from "preact/hooks";
import { del, get, post } from "../api";
import { useAction, useResource } from "../resource";
import { Badge, Snippet } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";
import { type Column, Table } from "../ui/table";

interface Management {
  surface: boolean;
  reason: string | null;
  approval: string;
  approvalWaitSeconds: number;
  categories: string[];
  tools: string[];
  resources: string[];
  prompts: string[];
  token: { set: boolean; source: string | null; fingerprint: string | null };
}

interface Status {
  gateway: { replica: string; version: string; uptimeSeconds: number };
  mcp: { url: string };
  management: Management;
  services: Record<string, string>;
}

interface Process {
  service: string;
  replica: string;
  version: string;
  uptimeSeconds: number;
  memoryBytes: number;
}

interface System {
  services: { service: string; health: string; replicas: Process[] }[];
  nats: { health: string; consumers: { stream: string; name: string; pending: number; ackPending: number }[] };
  vectorStore: { status: string; store?: string; encoder?: string; chunks?: number; detail?: string };
}

export default function Overview() {
  const status = useResource((signal) => get<Status>("/status", {}, signal), [], ["token", "tools"]);
  const system = useResource((signal) => get<System>("/audit/system", {}, signal), [], []);
  const data = status.envelope?.data;
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <button type="button" onClick={() => (status.reload(), system.reload())}>
          Read again
        </button>
      </div>
      <LoadError error={status.error} retry={status.reload} />
      {data && (
        <>
          <p>{status.envelope?.message}</p>
          <McpServer status={data} reload={status.reload} />
          <Connect />
          <Settings management={data.management} />
        </>
      )}
      <h2>Services</h2>
      {data && <Health services={data.services} />}
      <LoadError error={system.error} retry={system.reload} />
      {system.envelope && <SystemView system={system.envelope.data} />}
    </>
  );
}

function McpServer({ status, reload }: { status: Status; reload: () => void }) {
  const { management } = status;
  const [shown, setShown] = useState<string | null>(null);
  const rotate = useAction(() => post<{ token: string }>("/mcp-token"));
  const remove = useAction(() => del("/mcp-token"));
  const token = management.token;
  return (
    <section class="card" aria-labelledby="mcp-server">
      <h2 id="mcp-server">MCP server</h2>
      <dl class="facts">
        <dt>Endpoint</dt>
        <dd>
          <code>{status.mcp.url}</code>
        </dd>
        <dt>Management surface</dt>
        <dd>
          {management.surface ? (
            <Badge tone="ok">on with {management.tools.length} management tools</Badge>
          ) : (
            <>
              <Badge tone="warn">off</Badge> <span>{management.reason}</span>
            </>
          )}
        </dd>
        <dt>MCP token</dt>
        <dd>
          {token.set ? (
            <>
              set ({token.source === "configuration" ? "in configuration" : `by ${token.source ?? "the person"}`}),
              fingerprint <code>{token.fingerprint}</code>
            </>
          ) : (
            "none"
          )}
        </dd>
      </dl>
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={rotate.pending}
          onClick={async () => {
            remove.clear();
            const answer = await rotate.run();
            const data = answer?.data as { token?: string } | undefined;
            setShown(data?.token ?? null);
            reload();
          }}
        >
          {token.set ? "Rotate the token" : "Generate a token"}
        </button>
        <button
          type="button"
          class="danger"
          disabled={remove.pending || !token.set}
          onClick={async () => {
            if (!window.confirm("Remove the MCP token? Every AI client loses the management tools at once.")) return;
            rotate.clear();
            setShown(null);
            await remove.run();
            reload();
          }}
        >
          Remove the token
        </button>
      </div>
      <Notice outcome={rotate.outcome} onClose={rotate.clear} />
      <Notice outcome={remove.outcome} onClose={remove.clear} />
      {shown && (
        <div class="notice info" role="region" aria-label="The new MCP token">
          <p>The new token, shown this once: give it to the AI client now.</p>
          <Snippet text={shown} label="the MCP token" />
          <button type="button" onClick={() => setShown(null)}>
            I have kept it
          </button>
        </div>
      )}
    </section>
  );
}

interface ClientSnippet {
  client: string;
  auth: string;
  steps: string[];
  config: string;
  language: string;
}

/** How each AI client connects to this gateway's /mcp: the gateway's own text (docs/clients.md says the same). */
function Connect() {
  const snippets = useResource((signal) => get<{ url: string; snippets: ClientSnippet[] }>("/clients/snippets", {}, signal), []);
  return (
    <section class="card" aria-labelledby="connect">
      <h2 id="connect">Connect an AI client</h2>
      <LoadError error={snippets.error} retry={snippets.reload} />
      {(snippets.envelope?.data.snippets ?? []).map((snippet) => (
        <details key={snippet.client}>
          <summary>
            {snippet.client} <span class="muted">({snippet.auth === "oauth" ? "signs in with OAuth" : "a named token in a header"})</span>
          </summary>
          <ol>
            {snippet.steps.map((step) => (
              <li key={step}>{step}</li>
            ))}
          </ol>
          {snippet.config && <Snippet text={snippet.config} label={`the ${snippet.client} configuration`} />}
        </details>
      ))}
    </section>
  );
}

function Settings({ management }: { management: Management }) {
  return (
    <section class="card" aria-labelledby="settings">
      <h2 id="settings">Management settings in force</h2>
      <dl class="facts">
        <dt>Approval mode</dt>
        <dd>
          <code>{management.approval}</code> (management.approval)
        </dd>
        <dt>Approval wait</dt>
        <dd>{management.approvalWaitSeconds} s (hitl.approval-wait-seconds)</dd>
        <dt>Categories</dt>
        <dd>{management.categories.join(", ") || "none"}</dd>
        <dt>Offered</dt>
        <dd>
          {management.tools.length} tools, {management.resources.length} resources, {management.prompts.length} prompts
        </dd>
      </dl>
    </section>
  );
}

function Health({ services }: { services: Record<string, string> }) {
  const rows = Object.entries(services).map(([name, state]) => ({ name, state }));
  const columns: Column<{ name: string; state: string }>[] = [
    { title: "Service", cell: (row) => row.name },
    { title: "State", cell: (row) => <Badge tone={row.state === "ok" ? "ok" : "bad"}>{row.state}</Badge> },
  ];
  return <Table caption="Each service's health" columns={columns} rows={rows} rowKey={(row) => row.name} empty="No service." />;
}

function SystemView({ system }: { system: System }) {
  const processes = system.services.flatMap((service) => service.replicas);
  const columns: Column<Process>[] = [
    { title: "Process", cell: (row) => `${row.service} ${row.replica}` },
    { title: "Version", cell: (row) => row.version },
    { title: "Up", cell: (row) => `${Math.round(row.uptimeSeconds)} s`, className: "num" },
    { title: "Memory", cell: (row) => `${(row.memoryBytes / 1048576).toFixed(1)} MiB`, className: "num" },
  ];
  const store = system.vectorStore;
  return (
    <>
      <h3>Processes</h3>
      <Table caption="Each service's processes" columns={columns} rows={processes} rowKey={(row) => `${row.service}/${row.replica}`} empty="No heartbeat yet." />
      <h3>NATS and the vector store</h3>
      <dl class="facts">
        <dt>NATS</dt>
        <dd>
          <Badge tone={system.nats.health === "ok" ? "ok" : "bad"}>{system.nats.health}</Badge>
          {system.nats.consumers.map((consumer) => (
            <span key={consumer.name}>
              {" "}
              {consumer.stream}/{consumer.name}: {consumer.pending} pending
            </span>
          ))}
        </dd>
        <dt>Vector store</dt>
        <dd>
          <Badge tone={store.status === "ok" ? "ok" : "warn"}>{store.status}</Badge>{" "}
          {store.status === "ok" ? `${store.store}, ${store.encoder}, ${store.chunks} chunks` : store.detail}
        </dd>
      </dl>
    </>
  );
}
