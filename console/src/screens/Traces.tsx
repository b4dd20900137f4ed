// Traces: the recent traces the audit service keeps, filtered by tool, outcome and duration; one opens as a span
// waterfall (screens/Trace.tsx).
import { useState } from "preact/hooks";
import { get } from "../api";
import { useResource } from "../resource";
import { Badge, Choice, Field, Link, Time } from "../ui/controls";
import { LoadError } from "../ui/notice";
import { type Column, Table } from "../ui/table";

export interface TraceSummary {
  traceId: string;
  name: string;
  tool: string | null;
  outcome: string | null;
  start: string;
  durationMs: number;
  spanCount: number;
  services: string[];
  error: boolean;
  complete: boolean;
}

export const OUTCOMES = ["OK", "ERROR", "REFUSED", "DECLINED", "DENIED", "TIMEOUT"];

export function outcomeTone(outcome: string | null): "ok" | "bad" | "warn" | "plain" {
  if (outcome === "OK") return "ok";
  if (outcome === "ERROR") return "bad";
  return outcome ? "warn" : "plain";
}

const MINIMUM = "A duration in milliseconds, 0 or more (empty for any): the list keeps the last one that was.";

export default function Traces() {
  const [tool, setTool] = useState("");
  const [outcome, setOutcome] = useState("");
  const [minimum, setMinimum] = useState("");
  // The duration the list is filtered by: the last one typed that is a duration, so a slip (a minus sign, a
  // half-typed number) is said at its field and never sent, and the list stays the one its filters describe.
  const [applied, setApplied] = useState<number | null>(null);
  const [badMinimum, setBadMinimum] = useState(false);
  const [limit, setLimit] = useState(20);
  const listing = useResource(
    (signal) => get<{ traces: TraceSummary[]; kept: number }>("/traces", { tool: tool.trim(), outcome, minDurationMs: applied, limit }, signal),
    [tool, outcome, applied, limit],
    ["audit"],
  );
  const traces = listing.envelope?.data.traces ?? [];
  const columns: Column<TraceSummary>[] = [
    { title: "Started", cell: (row) => <Time iso={row.start} /> },
    {
      title: "Trace",
      cell: (row) => (
        <Link to={`/traces/${row.traceId}`} label={`Trace ${row.name} ${row.traceId.slice(0, 8)}`}>
          {row.name}
        </Link>
      ),
    },
    { title: "Tool", cell: (row) => row.tool ?? <span class="muted">—</span> },
    { title: "Outcome", cell: (row) => (row.outcome ? <Badge tone={outcomeTone(row.outcome)}>{row.outcome}</Badge> : "—") },
    { title: "Duration", cell: (row) => `${row.durationMs.toFixed(1)} ms`, className: "num" },
    { title: "Spans", cell: (row) => row.spanCount, className: "num" },
    { title: "Services", cell: (row) => row.services.join(", ") },
  ];
  return (
    <>
      <div class="page-head">
        <h1>Traces</h1>
      </div>
      <form class="inline-fields" role="search" aria-label="Filter the traces" onSubmit={(event) => event.preventDefault()}>
        <Field label="Tool">
          {(id) => <input id={id} value={tool} maxLength={128} onInput={(event) => setTool(event.currentTarget.value)} />}
        </Field>
        <Choice label="Outcome" value={outcome} options={OUTCOMES} onChange={setOutcome} none="any" />
        <Field label="At least (ms)" hint={badMinimum ? <span role="alert">{MINIMUM}</span> : undefined}>
          {(id, hint) => (
            <input
              id={id}
              type="number"
              min={0}
              step="any"
              value={minimum}
              aria-invalid={badMinimum}
              aria-describedby={hint}
              onInput={(event) => {
                const field = event.currentTarget;
                setMinimum(field.value);
                const bad = !field.validity.valid || (field.value !== "" && !(Number(field.value) >= 0));
                setBadMinimum(bad);
                if (!bad) setApplied(field.value === "" ? null : Number(field.value));
              }}
            />
          )}
        </Field>
        <Choice label="Show" value={String(limit)} options={["20", "50", "100", "500"]} onChange={(count) => setLimit(Number(count))} />
      </form>
      <LoadError error={listing.error} retry={listing.reload} />
      {listing.envelope && <p role="status">{listing.envelope.message}</p>}
      <Table
        caption="The recent traces, newest first"
        columns={columns}
        rows={traces}
        rowKey={(row) => row.traceId}
        empty="No trace fits these filters yet."
      />
    </>
  );
}
