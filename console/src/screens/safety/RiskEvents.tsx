// The recent risk events as a timeline, newest first: management calls that were not successful reads, guard
// refusals, poisoning hits, changed definitions.
import { useState } from "preact/hooks";
import { get } from "../../api";
import { useResource } from "../../resource";
import { Badge, Field, Time } from "../../ui/controls";
import { LoadError } from "../../ui/notice";
import { Pager } from "../../ui/table";

interface RiskEvent {
  index: number;
  time: string;
  type: string;
  severity: string;
  service: string;
  subject: string;
  reason: string | null;
  summary: string;
}

const PAGE = 25;

export function RiskEvents() {
  const [type, setType] = useState("");
  const [cursors, setCursors] = useState<number[]>([]);
  const before = cursors[cursors.length - 1] ?? 0;
  const events = useResource(
    (signal) =>
      get<{ entries: RiskEvent[]; nextCursor: number | null }>("/audit/risk-events", { limit: PAGE, before, type: type.trim() }, signal),
    [type, before],
    cursors.length === 0 ? ["audit"] : [],
  );
  const entries = events.envelope?.data.entries ?? [];
  return (
    <section aria-labelledby="risk">
      <h2 id="risk">Recent risk events</h2>
      <form class="inline-fields" role="search" aria-label="Filter the risk events" onSubmit={(event) => event.preventDefault()}>
        <Field label="Type" hint="MANAGEMENT, sandbox-guard-blocked, poisoning-hit, hash-ledger-mismatch, …">
          {(id, hint) => (
            <input id={id} aria-describedby={hint} value={type} maxLength={64} onInput={(event) => (setType(event.currentTarget.value), setCursors([]))} />
          )}
        </Field>
      </form>
      <LoadError error={events.error} retry={events.reload} />
      {entries.length === 0 && <p class="empty">No risk event fits.</p>}
      <ol class="timeline" aria-label="Risk events, newest first">
        {entries.map((event) => (
          <li key={event.index}>
            <Time iso={event.time} /> <Badge tone={event.severity === "warn" ? "warn" : event.severity === "error" ? "bad" : "info"}>{event.severity}</Badge>{" "}
            <strong>{event.type}</strong> {event.subject && <code>{event.subject}</code>} <span class="muted">({event.service})</span>
            <p>{event.summary}</p>
          </li>
        ))}
      </ol>
      <Pager cursors={cursors} next={events.envelope?.data.nextCursor ?? null} onPage={setCursors} />
    </section>
  );
}
