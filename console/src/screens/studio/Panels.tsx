// Beside the editor: the risk of the spec as typed (the service's own assessment, read as the person types), the
// last Local Pass (result, logs, risk, time), and what publishing would do and at which risk, before the click.
import { useEffect, useState } from "preact/hooks";
import { call, get, messageOf, segment } from "../../api";
import { type Outcome, useResource } from "../../resource";
import { Badge, Code } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { RiskFacts } from "./parts";
import type { PublishPlan, RiskReport, Spec, TestReport } from "./types";

// How long typing pauses before the risk is read again.
const SETTLE_MS = 400;

export function LiveRisk({ spec }: { spec: Spec }) {
  const [report, setReport] = useState<RiskReport | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const text = JSON.stringify(spec);
  useEffect(() => {
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      call<RiskReport>("POST", "/tools/risk", { spec }, controller.signal)
        .then((answer) => (setReport(answer.data), setRefusal(null)))
        .catch((failure: unknown) => {
          if (!controller.signal.aborted) setRefusal(messageOf(failure));
        });
    }, SETTLE_MS);
    return () => (window.clearTimeout(timer), controller.abort());
  }, [text]);
  return (
    <section class="card" aria-labelledby="risk">
      <h3 id="risk">Risk as written</h3>
      <div role="status">
        {refusal !== null ? <p class="refusal">{refusal}</p> : report ? <RiskFacts report={report} /> : <p class="muted">Reading the risk…</p>}
      </div>
    </section>
  );
}

export interface Tested {
  outcome: Outcome;
  report: TestReport | null;
  risk: RiskReport | null;
}

export function LocalPass({ tested, running, onTest }: { tested: Tested | null; running: boolean; onTest: () => void }) {
  const report = tested?.report;
  return (
    <section class="card" aria-labelledby="local-pass">
      <h3 id="local-pass">Local Pass</h3>
      <p class="hint">One run of the saved draft with its test values, in its own sandbox: what publishing needs.</p>
      <div class="actions">
        <button type="button" class="primary" disabled={running} onClick={onTest}>
          {running ? "Testing…" : "Test"}
        </button>
      </div>
      {tested && <Notice outcome={tested.outcome} />}
      {report && (
        <dl class="facts">
          <dt>Passed</dt>
          <dd>
            <Badge tone={report.passed ? "ok" : "bad"}>{report.passed ? "passed" : "failed"}</Badge>
          </dd>
          <dt>Time</dt>
          <dd>{report.durationMs} ms</dd>
          {report.error && (
            <>
              <dt>Error</dt>
              <dd>{report.error}</dd>
            </>
          )}
          {report.guardBlocks.length > 0 && (
            <>
              <dt>Refused by the sandbox</dt>
              <dd>{report.guardBlocks.map((block) => `${block.reason}: ${block.message}`).join("; ")}</dd>
            </>
          )}
        </dl>
      )}
      {report?.passed && (
        <>
          <h4>Result</h4>
          <Code>{JSON.stringify(report.result, null, 2)}</Code>
        </>
      )}
      {report && (
        <>
          <h4>Logs</h4>
          {report.console.length === 0 ? <p class="empty">Nothing was logged.</p> : <Code>{report.console.join("\n")}</Code>}
        </>
      )}
      {tested?.risk && (
        <>
          <h4>Risk of the tested draft</h4>
          <RiskFacts report={tested.risk} />
        </>
      )}
    </section>
  );
}

export function Publish({ name, dirty, publishing, onPublish }: { name: string; dirty: boolean; publishing: boolean; onPublish: () => void }) {
  const plan = useResource((signal) => get<PublishPlan>(`/tools/${segment(name)}/publish`, {}, signal), [name], ["tools"]);
  const said = plan.envelope;
  return (
    <section class="card" aria-labelledby="publish">
      <h3 id="publish">Publish</h3>
      <LoadError error={plan.error} retry={plan.reload} />
      {said && (
        <div class={said.ok ? "notice info" : "notice refused"} role="status">
          <p>{said.message}</p>
        </div>
      )}
      {dirty && <p class="hint">The editor has unsaved changes: this is what publishing the saved draft would do.</p>}
      <div class="actions">
        <button type="button" class="primary" disabled={publishing} onClick={onPublish}>
          Publish
        </button>
      </div>
    </section>
  );
}
