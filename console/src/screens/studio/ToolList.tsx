// The tools: drafts, published and bundled, with state, risk, network and whether /mcp serves them; the exposure
// (autoExpose, and the tools listed explicitly); a bundled example copied into a new draft.
import { useState } from "preact/hooks";
import { get } from "../../api";
import { useAction, useResource } from "../../resource";
import { navigate } from "../../router";
import { Badge, Choice, Link } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { Pages, usePaged } from "../../ui/paging";
import { RiskBadge } from "../../ui/risk";
import { type Column, Table } from "../../ui/table";
import { setExposure } from "./exposure";
import { StateBadge } from "./parts";
import type { Exposure, ToolSummary } from "./types";

// Which of the tools the list shows, by what the filter says.
const SHOWN: Record<string, (tool: ToolSummary) => boolean> = {
  "All tools": () => true,
  Drafts: (tool) => tool.state === "draft",
  Published: (tool) => tool.source !== "bundled" && tool.state !== "draft",
  "Bundled examples": (tool) => tool.source === "bundled",
};

export function ToolList() {
  const tools = useResource((signal) => get<ToolSummary[]>("/tools", { includeBundled: true }, signal), [], ["tools"]);
  const exposure = useResource((signal) => get<Exposure>("/tools/exposure", {}, signal), [], ["tools"]);
  const change = useAction(setExposure);
  const [shown, setShown] = useState("All tools");
  const listed = new Set(exposure.envelope?.data.tools ?? []);
  const rows = (tools.envelope?.data ?? []).filter(SHOWN[shown] ?? (() => true));
  const paged = usePaged(rows);
  const setting = exposure.envelope?.data;

  const columns: Column<ToolSummary>[] = [
    {
      title: "Tool",
      cell: (tool) => (
        <>
          <Link to={`/tools?open=${encodeURIComponent(tool.name)}`} label={`Open ${tool.name}`}>
            {tool.name}
          </Link>
          <p class="muted description">{tool.description}</p>
        </>
      ),
    },
    { title: "State", cell: (tool) => <StateBadge tool={tool} /> },
    { title: "Risk", cell: (tool) => <RiskBadge risk={tool.risk} /> },
    { title: "Network", cell: (tool) => [tool.network.mode, ...tool.network.hosts].join(" ") },
    { title: "Local Pass", cell: (tool) => (tool.tested ? "passed" : "not yet") },
    { title: "On /mcp", cell: (tool) => (tool.servedOnMcp ? <Badge tone="ok">served</Badge> : <span class="muted">no</span>) },
    {
      title: "Listed",
      cell: (tool) =>
        setting && (
          <input
            type="checkbox"
            checked={listed.has(tool.name)}
            disabled={change.pending}
            aria-label={`List ${tool.name} in the exposure`}
            onChange={(event) =>
              change.run(setting, { listed: [tool.name, event.currentTarget.checked] }).then(exposure.reload)
            }
          />
        ),
    },
    {
      title: "Copy",
      cell: (tool) => (
        <button type="button" onClick={() => navigate(`/tools?new=${encodeURIComponent(tool.name)}`)} aria-label={`Copy ${tool.name} into a new draft`}>
          Copy
        </button>
      ),
    },
  ];

  return (
    <>
      <div class="actions">
        <button type="button" class="primary" onClick={() => navigate("/tools?new=")}>
          New tool
        </button>
      </div>
      <section aria-labelledby="exposure">
        <h2 id="exposure">Exposure</h2>
        <LoadError error={exposure.error} retry={exposure.reload} />
        {setting && (
          <>
            <p>{exposure.envelope?.message}</p>
            <label class="choice">
              <input
                type="checkbox"
                checked={setting.autoExpose}
                disabled={change.pending}
                onChange={(event) => change.run(setting, { autoExpose: event.currentTarget.checked }).then(exposure.reload)}
              />
              Serve every newly published tool on /mcp (autoExpose)
            </label>
            <p class="hint">A tool ticked under "Listed" is served as well: a bundled example, or a published tool when autoExpose is off.</p>
          </>
        )}
        <Notice outcome={change.outcome} onClose={change.clear} />
      </section>
      <section aria-labelledby="tools">
        <div class="page-head">
          <h2 id="tools">Tools</h2>
          <Choice label="Show" value={shown} options={Object.keys(SHOWN)} onChange={(value) => (setShown(value), paged.setPage(0))} />
        </div>
        <LoadError error={tools.error} retry={tools.reload} />
        <Table caption="The tools" columns={columns} rows={paged.rows} rowKey={(tool) => tool.name} empty="No tool here yet." />
        <Pages paged={paged} label="tools" />
      </section>
    </>
  );
}
