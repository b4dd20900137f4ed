// One trace as a span waterfall: each span on its own row, its bar placed by when it started and how long it took,
// the same said in words for a screen reader; a span opens to its attributes.
import { get, segment } from "../api";
import { useResource } from "../resource";
import type { ScreenProps } from ".";
import { Badge, Link, Time } from "../ui/controls";
import { LoadError } from "../ui/notice";
import { outcomeTone, type TraceSummary } from "./Traces";

interface Span {
  spanId: string;
  name: string;
  service: string;
  kind: string;
  startOffsetMs: number;
  durationMs: number;
  error: boolean;
  status: string | null;
  attributes: Record<string, string>;
  children: Span[];
}

interface Trace extends TraceSummary {
  spans: Span[];
  droppedSpans: number;
}

interface Row {
  span: Span;
  depth: number;
}

function rows(spans: Span[], depth = 0, into: Row[] = []): Row[] {
  for (const span of spans) {
    into.push({ span, depth });
    rows(span.children, depth + 1, into);
  }
  return into;
}

export default function TraceView({ params }: ScreenProps) {
  const id = params.id ?? "";
  const trace = useResource((signal) => get<Trace>(`/traces/${segment(id)}`, {}, signal), [id]);
  const data = trace.envelope?.data;
  const total = Math.max(data?.durationMs ?? 1, 0.001);
  return (
    <>
      <div class="page-head">
        <h1>Trace {data ? data.name : id}</h1>
        <Link to="/traces">All traces</Link>
      </div>
      <LoadError error={trace.error} retry={trace.reload} />
      {data && (
        <>
          <p role="status">{trace.envelope?.message}</p>
          <dl class="facts">
            <dt>Trace id</dt>
            <dd>
              <code>{data.traceId}</code>
            </dd>
            <dt>Started</dt>
            <dd>
              <Time iso={data.start} />
            </dd>
            <dt>Tool</dt>
            <dd>{data.tool ?? "—"}</dd>
            <dt>Outcome</dt>
            <dd>{data.outcome ? <Badge tone={outcomeTone(data.outcome)}>{data.outcome}</Badge> : "—"}</dd>
            <dt>Duration</dt>
            <dd>{data.durationMs.toFixed(2)} ms</dd>
            {data.droppedSpans > 0 && (
              <>
                <dt>Dropped</dt>
                <dd>{data.droppedSpans} spans were not kept</dd>
              </>
            )}
          </dl>
          <ol class="waterfall" aria-label="Spans, in the order they started">
            {rows(data.spans).map(({ span, depth }) => (
              <li key={span.spanId} class={span.error ? "error" : undefined}>
                <details>
                  <summary>
                    <span class="span-name" style={{ paddingLeft: `${depth * 1.1}rem` }}>
                      <span class="muted">{span.service}</span> {span.name}
                    </span>
                    <span class="span-track" aria-hidden="true">
                      <span
                        class="span-bar"
                        style={{
                          marginLeft: `${(span.startOffsetMs / total) * 100}%`,
                          width: `${Math.max((span.durationMs / total) * 100, 0.4)}%`,
                        }}
                      />
                    </span>
                    <span class="span-time">
                      {span.durationMs.toFixed(2)} ms
                      <span class="visually-hidden">, starting at {span.startOffsetMs.toFixed(2)} ms</span>
                      {span.error && <Badge tone="bad">error</Badge>}
                    </span>
                  </summary>
                  <dl class="facts span-facts">
                    <dt>Kind</dt>
                    <dd>{span.kind}</dd>
                    <dt>Starts at</dt>
                    <dd>{span.startOffsetMs.toFixed(3)} ms</dd>
                    {span.status && (
                      <>
                        <dt>Status</dt>
                        <dd>{span.status}</dd>
                      </>
                    )}
                    {Object.entries(span.attributes).map(([key, value]) => (
                      <>
                        <dt key={`${key}-k`}>{key}</dt>
                        <dd key={`${key}-v`}>{value}</dd>
                      </>
                    ))}
                  </dl>
                </details>
              </li>
            ))}
          </ol>
        </>
      )}
    </>
  );
}
