// One server's tools as it lists them now: description, risk and why, the poisoning scan, the fingerprint; each can
// join the change being planned (its name on /mcp, and whether every call asks the person).
import { useState } from "preact/hooks";
import { get, segment } from "../../api";
import { useResource } from "../../resource";
import { Badge } from "../../ui/controls";
import { LoadError } from "../../ui/notice";
import { Pages, usePaged } from "../../ui/paging";
import { RiskBadge } from "../../ui/risk";
import { type Column, Table } from "../../ui/table";
import type { Member, ServerTools as Listed, UpstreamTool } from "./types";

export function ServerTools({ serverId, onAdd }: { serverId: string; onAdd: (member: Member) => void }) {
  const listed = useResource((signal) => get<Listed>(`/servers/${segment(serverId)}/tools`, {}, signal), [serverId], ["servers"]);
  const [aliases, setAliases] = useState<Record<string, string>>({});
  const [asks, setAsks] = useState<Record<string, boolean>>({});
  const paged = usePaged(listed.envelope?.data.tools ?? []);

  const columns: Column<UpstreamTool>[] = [
    {
      title: "Tool",
      cell: (tool) => (
        <>
          <strong>{tool.name}</strong>
          {tool.title && <span class="muted"> {tool.title}</span>}
          <p class="muted description">{tool.description}</p>
        </>
      ),
    },
    {
      title: "Risk",
      cell: (tool) => (
        <>
          <RiskBadge risk={tool.risk} /> <span class="muted">{tool.riskReasons.join("; ")}</span>
          {tool.poisoning.length > 0 && <p class="reason">Poisoning scan: {tool.poisoning.join(", ")}</p>}
        </>
      ),
    },
    {
      title: "Definition",
      cell: (tool) => <Badge tone={tool.fingerprint === "awaiting-rereview" ? "warn" : "plain"}>{tool.fingerprint}</Badge>,
    },
    {
      title: "Expose",
      cell: (tool) => (
        <div class="actions">
          <input
            aria-label={`Name on /mcp for ${tool.name}`}
            placeholder={tool.name}
            value={aliases[tool.name] ?? ""}
            onInput={(event) => setAliases({ ...aliases, [tool.name]: event.currentTarget.value })}
          />
          <label class="choice">
            <input
              type="checkbox"
              aria-label={`${tool.name} asks the person before each call`}
              checked={asks[tool.name] ?? true}
              onChange={(event) => setAsks({ ...asks, [tool.name]: event.currentTarget.checked })}
            />
            asks the person
          </label>
          <button
            type="button"
            aria-label={`Add to the change: ${tool.name}`}
            onClick={() => onAdd({ serverId, tool: tool.name, alias: aliases[tool.name] ?? "", hitl: asks[tool.name] ?? true })}
          >
            Add to the change
          </button>
        </div>
      ),
    },
  ];

  return (
    <section class="card" aria-labelledby="server-tools">
      <h3 id="server-tools">The tools of {serverId}</h3>
      <LoadError error={listed.error} retry={listed.reload} />
      {listed.envelope && <p role="status">{listed.envelope.message}</p>}
      <Table caption={`The tools of ${serverId}`} columns={columns} rows={paged.rows} rowKey={(tool) => tool.name} empty="It lists no tools now." />
      <Pages paged={paged} label={`the tools of ${serverId}`} />
    </section>
  );
}
