// Small pieces of Tool Studio: a tool's state and source as badges, a risk report's facts.
import { Badge, type Tone } from "../../ui/controls";
import { RiskBadge } from "../../ui/risk";
import type { RiskReport, ToolSummary } from "./types";

export function StateBadge({ tool }: { tool: Pick<ToolSummary, "state" | "source"> }) {
  const tone: Tone = tool.state === "published" ? "ok" : tool.state === "draft" ? "info" : "warn";
  return (
    <>
      <Badge tone={tone}>{tool.state}</Badge> {tool.source !== "authored" && <Badge>{tool.source}</Badge>}
    </>
  );
}

export function RiskFacts({ report }: { report: RiskReport }) {
  return (
    <dl class="facts">
      <dt>Risk</dt>
      <dd>
        <RiskBadge risk={report.risk} /> {report.reasons.join("; ")}
      </dd>
      <dt>Network</dt>
      <dd>{[report.network.mode, ...report.network.hosts].join(" ")}</dd>
      <dt>Calls</dt>
      <dd>{report.asksPerson ? "each call asks the person" : "run without asking"}</dd>
      {report.poisoningHits.length > 0 && (
        <>
          <dt>Poisoning scan</dt>
          <dd>{report.poisoningHits.join(", ")}</dd>
        </>
      )}
    </dl>
  );
}
