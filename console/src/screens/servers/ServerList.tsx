// The registered upstream servers, each with its connection state (live: the tools service tells every change),
// its tools and risk; reconnect and remove. One of them open shows its tools.
import { del, post, segment } from "../../api";
import { type Resource, useAction } from "../../resource";
import { Badge, type Tone, Time } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { Pages, usePaged } from "../../ui/paging";
import { type Column, Table } from "../../ui/table";
import { RiskBadge } from "../../ui/risk";
import type { ServerStatus } from "./types";

const STATE_TONES: Record<string, Tone> = { connected: "ok", connecting: "info", failed: "bad", disabled: "warn" };

export function StateBadge({ state }: { state: string }) {
  return <Badge tone={STATE_TONES[state] ?? "plain"}>{state}</Badge>;
}

/** Where a server is: its URL, or the command a stdio server runs. */
export function whereOf(server: Pick<ServerStatus, "url" | "command" | "args">): string {
  return server.url || [server.command, ...server.args].join(" ");
}

export function ServerList({
  servers,
  open,
  onOpen,
}: {
  servers: Resource<ServerStatus[]>;
  open: string | null;
  onOpen: (id: string | null) => void;
}) {
  const reconnect = useAction((id: string) => post(`/servers/${segment(id)}/reconnect`));
  const remove = useAction((server: ServerStatus) => del(`/servers/${segment(server.id)}`, { expectedRevision: server.revision }));
  const paged = usePaged(servers.envelope?.data ?? []);

  const columns: Column<ServerStatus>[] = [
    {
      title: "Server",
      cell: (server) => (
        <>
          <strong>{server.id}</strong>
          {server.name && server.name !== server.id && <span class="muted"> {server.name}</span>}
          {server.description && <p class="muted description">{server.description}</p>}
        </>
      ),
    },
    {
      title: "Where",
      cell: (server) => (
        <>
          {server.transport} <code class="where">{whereOf(server)}</code>
        </>
      ),
    },
    {
      title: "Connection",
      cell: (server) => (
        <>
          <StateBadge state={server.state} /> <span class="muted">since</span> <Time iso={server.since} />
          {server.reason && <p class="reason">{server.reason}</p>}
        </>
      ),
    },
    { title: "Tools", cell: (server) => server.tools, className: "num" },
    {
      title: "Risk",
      cell: (server) => (
        <>
          <RiskBadge risk={server.risk} /> <span class="muted">{server.riskReasons.join("; ")}</span>
        </>
      ),
    },
    {
      title: "Actions",
      cell: (server) => (
        <div class="actions">
          <button type="button" aria-pressed={open === server.id} onClick={() => onOpen(open === server.id ? null : server.id)} aria-label={`Tools of ${server.id}`}>
            Tools
          </button>
          <button type="button" disabled={reconnect.pending} onClick={() => reconnect.run(server.id).then(servers.reload)} aria-label={`Reconnect ${server.id}`}>
            Reconnect
          </button>
          <button
            type="button"
            class="danger"
            disabled={remove.pending}
            aria-label={`Remove ${server.id}`}
            onClick={() => {
              if (!window.confirm(`Remove the server '${server.id}'? Its exposed tools leave /mcp.`)) return;
              if (open === server.id) onOpen(null);
              void remove.run(server).then(servers.reload);
            }}
          >
            Remove
          </button>
        </div>
      ),
    },
  ];

  return (
    <section aria-labelledby="registered">
      <h2 id="registered">Registered servers</h2>
      <LoadError error={servers.error} retry={servers.reload} />
      <Notice outcome={reconnect.outcome} onClose={reconnect.clear} />
      <Notice outcome={remove.outcome} onClose={remove.clear} />
      <Table
        caption="The registered upstream servers"
        columns={columns}
        rows={paged.rows}
        rowKey={(server) => server.id}
        selected={open}
        empty="No upstream server is registered: add one below, or from the catalog."
      />
      <Pages paged={paged} label="servers" />
    </section>
  );
}
