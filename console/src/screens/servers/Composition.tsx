// The upstream tools composed onto /mcp: each with its HITL switch, its risk (inherent, and after HITL), whether it
// is served now or why it is withheld, its definition's state and its upstream's connection. A switch flipped or a
// tool taken off joins the change being planned; nothing changes until the plan is applied.
import type { Resource } from "../../resource";
import { Badge } from "../../ui/controls";
import { LoadError } from "../../ui/notice";
import { Pages, usePaged } from "../../ui/paging";
import { RiskBadge } from "../../ui/risk";
import { type Column, Table } from "../../ui/table";
import { StateBadge } from "./ServerList";
import type { Change, Composition as Composed, ExposedTool } from "./types";

export function Composition({
  composition,
  change,
  onChange,
}: {
  composition: Resource<Composed>;
  change: Change;
  onChange: (change: Change) => void;
}) {
  const view = composition.envelope?.data;
  const paged = usePaged(view?.tools ?? []);

  function hitlOf(tool: ExposedTool): boolean {
    return change.setHitl.find((setting) => setting.name === tool.name)?.hitl ?? tool.hitl;
  }

  function switchHitl(tool: ExposedTool, hitl: boolean): void {
    const others = change.setHitl.filter((setting) => setting.name !== tool.name);
    onChange({ ...change, setHitl: hitl === tool.hitl ? others : [...others, { name: tool.name, hitl }] });
  }

  function takeOff(tool: ExposedTool, off: boolean): void {
    const others = change.remove.filter((name) => name !== tool.name);
    onChange({ ...change, remove: off ? [...others, tool.name] : others });
  }

  const columns: Column<ExposedTool>[] = [
    {
      title: "Name on /mcp",
      cell: (tool) => (
        <>
          <strong>{tool.name}</strong>
          <p class="muted description">
            {tool.serverId}/{tool.tool}
          </p>
        </>
      ),
    },
    {
      title: "Asks the person",
      cell: (tool) => (
        <label class="switch">
          <input
            type="checkbox"
            role="switch"
            checked={hitlOf(tool)}
            aria-label={`${tool.name} asks the person before each call`}
            onChange={(event) => switchHitl(tool, event.currentTarget.checked)}
          />
          <span aria-hidden="true">{hitlOf(tool) ? "on" : "off"}</span>
        </label>
      ),
    },
    { title: "Inherent risk", cell: (tool) => <RiskBadge risk={tool.inherentRisk} /> },
    {
      title: "With its HITL",
      cell: (tool) => (
        <>
          <RiskBadge risk={tool.effectiveRisk} />
          {tool.poisoning.length > 0 && <p class="reason">Poisoning scan: {tool.poisoning.join(", ")}</p>}
        </>
      ),
    },
    {
      title: "On /mcp",
      cell: (tool) => (tool.served ? <Badge tone="ok">served</Badge> : <p class="reason">withheld: {tool.withheld}</p>),
    },
    {
      title: "Definition",
      cell: (tool) => <Badge tone={tool.fingerprint === "awaiting-rereview" ? "warn" : "plain"}>{tool.fingerprint}</Badge>,
    },
    { title: "Upstream", cell: (tool) => <StateBadge state={tool.upstream} /> },
    {
      title: "Take off",
      cell: (tool) => {
        const off = change.remove.includes(tool.name);
        return (
          <button type="button" aria-pressed={off} aria-label={`${off ? "Keep" : "Take off"}: ${tool.name}`} onClick={() => takeOff(tool, !off)}>
            {off ? "Keep" : "Take off"}
          </button>
        );
      },
    },
  ];

  return (
    <section aria-labelledby="composed">
      <h2 id="composed">Composed onto /mcp</h2>
      <LoadError error={composition.error} retry={composition.reload} />
      {view && (
        <p>
          Risk cap: <RiskBadge risk={view.cap} /> <span class="muted">(expose.risk-cap)</span>
        </p>
      )}
      <Table caption="The upstream tools composed onto /mcp" columns={columns} rows={paged.rows} rowKey={(tool) => tool.name} empty="No upstream tool is composed onto /mcp yet: open a server's tools and add one." />
      <Pages paged={paged} label="the composed tools" />
    </section>
  );
}
