// The management tool calls, the AI's and the person's: filtered, paged newest first, exported as JSON lines or CSV,
// each opened to its masked summary, arguments, result, duration, approval and trace.
import { useState } from "preact/hooks";
import { get, withQuery } from "../../api";
import { useResource } from "../../resource";
import { Badge, Choice, Field, Link, Time } from "../../ui/controls";
import { LoadError } from "../../ui/notice";
import { type Column, Pager, Table } from "../../ui/table";
import { OUTCOMES, outcomeTone } from "../Traces";

export interface Call {
  index: number;
  cursor: number;
  time: string;
  credential: { id: string; kind: string; name: string } | null;
  client: string;
  operator: string;
  interface: string;
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
  traceId: string | null;
}

const PAGE = 25;
const LEVELS = ["READ", "WRITE", "DESTRUCTIVE"];

/** Who made a call: the person through an interface, or the AI's client (its credential first). */
export function who(call: Call): string {
  if (call.operator === "person") return `person (${call.interface})`;
  return call.credential ? `${call.credential.name} · ${call.client}` : call.client;
}

/** A datetime-local field's value as the instant it names in this browser's time zone (RFC 3339), or nothing. */
function instant(local: string): string | null {
  if (!local) return null;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

export function Calls() {
  const [tool, setTool] = useState("");
  const [client, setClient] = useState("");
  const [level, setLevel] = useState("");
  const [outcome, setOutcome] = useState("");
  const [operator, setOperator] = useState("");
  const [via, setVia] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [cursors, setCursors] = useState<number[]>([]);
  const [open, setOpen] = useState<number | null>(null);
  const before = cursors[cursors.length - 1] ?? 0;
  const filter = {
    tool: tool.trim(),
    client: client.trim(),
    level,
    outcome,
    operator,
    interface: via,
    since: instant(since),
    until: instant(until),
  };
  const calls = useResource(
    (signal) => get<{ entries: Call[]; nextCursor: number | null }>("/audit/management-log", { limit: PAGE, before, ...filter }, signal),
    [JSON.stringify(filter), before],
    cursors.length === 0 ? ["audit"] : [],
  );
  const entries = calls.envelope?.data.entries ?? [];
  const columns: Column<Call>[] = [
    { title: "Time", cell: (row) => <Time iso={row.time} /> },
    { title: "Who", cell: (row) => who(row) },
    {
      title: "Tool",
      cell: (row) => (
        <button type="button" class="quiet link" onClick={() => setOpen(row.cursor)} aria-label={`Open call ${row.index}: ${row.tool}`}>
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
        <Field label="Client">
          {(id) => <input id={id} value={client} maxLength={200} onInput={(event) => refilter(() => setClient(event.currentTarget.value))} />}
        </Field>
        <Choice label="Level" value={level} options={LEVELS} onChange={(chosen) => refilter(() => setLevel(chosen))} none="any" />
        <Choice label="Call outcome" value={outcome} options={OUTCOMES} onChange={(chosen) => refilter(() => setOutcome(chosen))} none="any" />
        <Choice label="Operator" value={operator} options={["ai", "person"]} onChange={(chosen) => refilter(() => setOperator(chosen))} none="either" />
        <Choice label="Interface" value={via} options={["mcp", "console", "cli", "rest"]} onChange={(chosen) => refilter(() => setVia(chosen))} none="any" />
        <Field label="Since">
          {(id) => <input id={id} type="datetime-local" value={since} onInput={(event) => refilter(() => setSince(event.currentTarget.value))} />}
        </Field>
        <Field label="Until">
          {(id) => <input id={id} type="datetime-local" value={until} onInput={(event) => refilter(() => setUntil(event.currentTarget.value))} />}
        </Field>
      </form>
      <div class="actions">
        <span>Export what the filter keeps, oldest first:</span>
        <a class="button" href={`/api/v1${withQuery("/audit/export", { format: "jsonl", ...filter })}`} download>
          JSON lines
        </a>
        <a class="button" href={`/api/v1${withQuery("/audit/export", { format: "csv", ...filter })}`} download>
          CSV
        </a>
      </div>
      <LoadError error={calls.error} retry={calls.reload} />
      <Table
        caption="Management tool calls, newest first"
        columns={columns}
        rows={entries}
        rowKey={(row) => String(row.index)}
        selected={open === null ? null : String(entries.find((entry) => entry.cursor === open)?.index ?? "")}
        empty="No management call fits these filters."
      />
      <Pager cursors={cursors} next={calls.envelope?.data.nextCursor ?? null} onPage={setCursors} />
      {open !== null && <CallDetail cursor={open} onClose={() => setOpen(null)} />}
    </section>
  );
}

function CallDetail({ cursor, onClose }: { cursor: number; onClose: () => void }) {
  const opened = useResource((signal) => get<Call>(`/audit/management-log/${cursor}`, {}, signal), [cursor]);
  const call = opened.envelope?.data;
  if (!call) return <LoadError error={opened.error} retry={opened.reload} />;
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
        <dt>Who</dt>
        <dd>
          {who(call)}
          {call.credential && <span class="muted"> (credential {call.credential.id}, {call.credential.kind})</span>}
        </dd>
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
        <dt>Trace</dt>
        <dd>{call.traceId ? <Link to={`/traces/${call.traceId}`}>{call.traceId}</Link> : "not traced"}</dd>
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
