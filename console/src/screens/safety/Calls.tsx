// The management tool calls: filtered, paged newest first, each opened to its masked summary, arguments, result,
// duration and approval.
import { useState } from "preact/hooks";
import { get } from "../../api";
import { useResource } from "../../resource";
import { Badge, Choice, Field, Time } from "../../ui/controls";
import { LoadError } from "../../ui/notice";
import { type Column, Pager, Table } from "../../ui/table";
import { OUTCOMES, outcomeTone } from "../Traces";

export interface Call {
  index: number;
  cursor: number;
  time: string;
  client: string;
  tool: string;
  level: string;
  outcome: string;
  durationMs: number;
  summary: string;
  arguments: string;
  result: string;
  highRisk: boolean;
  approval: string | null;
  approvalSeconds: number | null;
}

const PAGE = 25;

export function Calls() {
  const [tool, setTool] = useState("");
  const [outcome, setOutcome] = useState("");
  const [cursors, setCursors] = useState<number[]>([]);
  const [open, setOpen] = useState<Call | null>(null);
  const before = cursors[cursors.length - 1] ?? 0;
  const calls = useResource(
    (signal) =>
      get<{ entries: Call[]; nextCursor: number | null }>(
        "/audit/management-log",
        { limit: PAGE, before, tool: tool.trim(), outcome },
        signal,
      ),
    [tool, outcome, before],
    cursors.length === 0 ? ["audit"] : [],
  );
  const entries = calls.envelope?.data.entries ?? [];
  const columns: Column<Call>[] = [
    { title: "Time", cell: (row) => <Time iso={row.time} /> },
    { title: "Client", cell: (row) => row.client },
    {
      title: "Tool",
      cell: (row) => (
        <button type="button" class="quiet link" onClick={() => setOpen(row)} aria-label={`Open call ${row.index}: ${row.tool}`}>
          {row.tool}
        </button>
      ),
    },
    { title: "Level", cell: (row) => row.level },
    { title: "Outcome", cell: (row) => <Badge tone={outcomeTone(row.outcome)}>{row.outcome}</Badge> },
    { title: "Approval", cell: (row) => row.approval ?? "—" },
    { title: "Duration", cell: (row) => `${row.durationMs} ms`, className: "num" },
  ];
  const refilter = (apply: () => void) => {
    apply();
    setCursors([]);
  };
  return (
    <section aria-labelledby="calls">
      <h2 id="calls">Management tool calls</h2>
      <form class="inline-fields" role="search" aria-label="Filter the management tool calls" onSubmit={(event) => event.preventDefault()}>
        <Field label="Tool name">
          {(id) => <input id={id} value={tool} maxLength={128} onInput={(event) => refilter(() => setTool(event.currentTarget.value))} />}
        </Field>
        <Choice label="Call outcome" value={outcome} options={OUTCOMES} onChange={(chosen) => refilter(() => setOutcome(chosen))} none="any" />
      </form>
      <LoadError error={calls.error} retry={calls.reload} />
      <Table
        caption="Management tool calls, newest first"
        columns={columns}
        rows={entries}
        rowKey={(row) => String(row.index)}
        selected={open ? String(open.index) : null}
        empty="No management call fits these filters."
      />
      <Pager cursors={cursors} next={calls.envelope?.data.nextCursor ?? null} onPage={setCursors} />
      {open && <CallDetail call={open} onClose={() => setOpen(null)} />}
    </section>
  );
}

function CallDetail({ call, onClose }: { call: Call; onClose: () => void }) {
  return (
    <section class="card" aria-labelledby="call-detail">
      <h3 id="call-detail">
        Call {call.index}: {call.tool}
      </h3>
      <dl class="facts">
        <dt>When</dt>
        <dd>
          <Time iso={call.time} />
        </dd>
        <dt>Client</dt>
        <dd>{call.client}</dd>
        <dt>Level</dt>
        <dd>
          {call.level}
          {call.highRisk && <Badge tone="bad">high risk</Badge>}
        </dd>
        <dt>Outcome</dt>
        <dd>{call.outcome}</dd>
        <dt>Duration</dt>
        <dd>{call.durationMs} ms</dd>
        <dt>Approval</dt>
        <dd>{call.approval ? `${call.approval}${call.approvalSeconds !== null ? ` after ${call.approvalSeconds} s` : ""}` : "not asked"}</dd>
        <dt>Summary</dt>
        <dd>{call.summary || "—"}</dd>
      </dl>
      <h4>Arguments (masked)</h4>
      <pre class="code">{call.arguments || "{}"}</pre>
      <h4>What the client received (masked)</h4>
      <pre class="code">{call.result}</pre>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </section>
  );
}
