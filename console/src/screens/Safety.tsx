// Safety (Observability's Safety tab): the management tool calls, filtered and opened one by one; the recent risk
// events; the HITL decisions, approval rate and time to answer; the audit chain and its verification.
import { useState } from "preact/hooks";
import { get } from "../api";
import { useAction, useResource } from "../resource";
import { Badge, Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";
import { Calls } from "./safety/Calls";
import { RiskEvents } from "./safety/RiskEvents";

interface Overview {
  window: number;
  capacity: number;
  managementOutcomes: Record<string, number>;
  riskEvents: Record<string, number>;
  chain: { length: number; headHash: string | null; lastEntry: string | null };
  pendingRecords: number;
  collectorSince: string | null;
}

interface Hitl {
  since: string | null;
  questions: number;
  approvalRate: number;
  answerTimes: { answered: number; p50Seconds: number; p90Seconds: number; maxSeconds: number };
  decisions: Record<string, Record<string, number>>;
  recent: { index: number; tool: string; client: string; approval: string | null; approvalSeconds: number | null; time: string }[];
}

interface Verified {
  ok: boolean;
  checked: number;
  firstIndex: number;
  lastIndex: number;
  broken: { index: number; reason: string } | null;
}

export default function Safety() {
  const overview = useResource((signal) => get<{ audit: Overview }>("/audit/overview", {}, signal), [], ["audit"]);
  const hitl = useResource((signal) => get<Hitl>("/audit/hitl", { recent: 20 }, signal), [], ["audit"]);
  return (
    <>
      <div class="page-head">
        <h1>Safety</h1>
      </div>
      <LoadError error={overview.error} retry={overview.reload} />
      <div class="cards">
        {hitl.envelope && <Approvals hitl={hitl.envelope.data} />}
        {overview.envelope && <Chain overview={overview.envelope.data.audit} />}
      </div>
      <Calls />
      <RiskEvents />
    </>
  );
}

function Approvals({ hitl }: { hitl: Hitl }) {
  const times = hitl.answerTimes;
  return (
    <section class="card" aria-labelledby="hitl">
      <h2 id="hitl">Human approvals</h2>
      <dl class="facts">
        <dt>Approval rate</dt>
        <dd>
          <strong>{(hitl.approvalRate * 100).toFixed(0)} %</strong> of {hitl.questions} questions
        </dd>
        <dt>Time to answer</dt>
        <dd>
          {times.answered === 0
            ? "no answer yet"
            : `${times.p50Seconds} s at the median, ${times.p90Seconds} s at the 90th percentile, ${times.maxSeconds} s at most (${times.answered} answers)`}
        </dd>
        {Object.entries(hitl.decisions).map(([side, decisions]) => (
          <>
            <dt key={`${side}-t`}>{side}</dt>
            <dd key={`${side}-d`}>
              {Object.entries(decisions)
                .map(([decision, count]) => `${count} ${decision}`)
                .join(", ")}
            </dd>
          </>
        ))}
        <dt>Since</dt>
        <dd>
          <Time iso={hitl.since} />
        </dd>
      </dl>
    </section>
  );
}

function Chain({ overview }: { overview: Overview }) {
  const [result, setResult] = useState<Verified | null>(null);
  const verify = useAction(() => get<Verified>("/audit/verify"));
  return (
    <section class="card" aria-labelledby="chain">
      <h2 id="chain">The audit chain</h2>
      <dl class="facts">
        <dt>Length</dt>
        <dd>{overview.chain.length} records</dd>
        <dt>Head</dt>
        <dd>{overview.chain.headHash ? <code>{overview.chain.headHash.slice(0, 16)}…</code> : "—"}</dd>
        <dt>Last entry</dt>
        <dd>
          <Time iso={overview.chain.lastEntry} />
        </dd>
        <dt>Not yet chained</dt>
        <dd>{overview.pendingRecords}</dd>
        <dt>Outcomes</dt>
        <dd>
          {Object.entries(overview.managementOutcomes)
            .map(([outcome, count]) => `${count} ${outcome}`)
            .join(", ") || "none yet"}
        </dd>
      </dl>
      <div class="actions">
        <button
          type="button"
          disabled={verify.pending}
          onClick={async () => {
            const answer = await verify.run();
            setResult(answer ? (answer.data as Verified) : null);
          }}
        >
          {verify.pending ? "Verifying…" : "Verify the chain"}
        </button>
        {result && <Badge tone={result.ok ? "ok" : "bad"}>{result.ok ? "intact" : "broken"}</Badge>}
      </div>
      <Notice outcome={verify.outcome} />
    </section>
  );
}
